"""ModernBERT-base and DeBERTa-v3-base encoders, kbc vs transformers' PyTorch (and BERT-base
in kbc): CPU time and peak memory of one forward pass on batch 1, random weights, at several
lengths.

    python bench/modernbert_encoder.py [--lengths 128 512 2048 8192] [--rounds 2] \
        [--engines ...] [--reference-python /work/refvenv/bin/python]
    python bench/modernbert_encoder.py --lengths 128 --rounds 5 \
        --engines kbc-deberta transformers-deberta

Each measurement runs in a fresh process on 2 threads (TensorFlow intra-op / torch): it
builds the model, runs one call to trace (kbc: a tf.function) and warm up, then times one
call by CPU time (time.process_time, all threads) and reads the process's peak RSS
(weights, runtime and the calls' activations; the allocators keep what the warm-up call
freed, so a per-call figure would read 0). Engines take turns within each round; the best
round counts. Engines:

- kbc-modernbert: `BertEncoder(BertConfig.preset("modernbert_base"))` (local layers in key
  bands, global layers in query chunks);
- transformers-modernbert: `ModernBertModel(ModernBertConfig())`, its default attention
  (run with `--reference-python`, a Python with torch and transformers);
- kbc-bert: `BertEncoder(BertConfig.preset("base"))` (dense attention; 512 positions at
  most, so longer lengths skip it);
- kbc-deberta: `BertEncoder(BertConfig.preset("deberta_v3_base"))` (disentangled
  attention), and transformers-deberta: `DebertaV2Model` in DeBERTa-v3-base's
  configuration, its default attention (512 positions at most, as BERT's).
"""

import argparse
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

ENGINES = ("kbc-modernbert", "transformers-modernbert", "kbc-bert", "kbc-deberta",
           "transformers-deberta")
_PRESETS = {"kbc-modernbert": "modernbert_base", "kbc-bert": "base",
            "kbc-deberta": "deberta_v3_base"}
# DeBERTa-v3-base in transformers' names (DebertaV2Config's defaults are another model's).
_DEBERTA_V3 = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
               "intermediate_size": 3072, "relative_attention": True, "position_buckets": 256,
               "norm_rel_ebd": "layer_norm", "share_att_key": True, "pos_att_type": "p2c|c2p",
               "layer_norm_eps": 1e-7, "max_relative_positions": -1,
               "position_biased_input": False, "type_vocab_size": 0}


def _kbc_call(preset, length):
    import numpy as np
    import tensorflow as tf

    import keras_bert_core as kbc

    tf.config.threading.set_intra_op_parallelism_threads(2)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    encoder = kbc.BertEncoder(kbc.BertConfig.preset(preset))
    ids = np.random.default_rng(0).integers(5, 30000, (1, length)).astype("int32")
    inputs = {"token_ids": tf.constant(ids), "segment_ids": tf.zeros_like(ids),
              "padding_mask": tf.ones_like(ids)}
    function = tf.function(lambda x: encoder(x)["sequence_output"], autograph=False)
    return lambda: function(inputs).numpy()


def _transformers_call(engine, length):
    import torch
    import transformers

    torch.set_num_threads(2)
    if engine == "transformers-deberta":
        model = transformers.DebertaV2Model(transformers.DebertaV2Config(**_DEBERTA_V3)).eval()
    else:
        model = transformers.ModernBertModel(transformers.ModernBertConfig()).eval()
    ids = torch.randint(5, 30000, (1, length))
    mask = torch.ones_like(ids)

    def call():
        with torch.no_grad():
            return model(input_ids=ids, attention_mask=mask).last_hidden_state.numpy()

    return call


def child(engine, length):
    if engine.startswith("transformers-"):
        call = _transformers_call(engine, length)
    else:
        call = _kbc_call(_PRESETS[engine], length)
    call()  # trace and warm up
    start = time.process_time()
    call()
    cpu = time.process_time() - start
    print(json.dumps({"engine": engine, "length": length, "cpu_s": cpu,
                      "peak_bytes": common.proc_status_bytes("VmHWM:")}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 512, 2048, 8192])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    parser.add_argument("--reference-python", default="/work/refvenv/bin/python")
    parser.add_argument("--out")
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "LENGTH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return

    env = common.child_environment()
    best = {}
    for _ in range(args.rounds):
        for length in args.lengths:
            for engine in args.engines:
                if engine in ("kbc-bert", "kbc-deberta", "transformers-deberta") and length > 512:
                    continue
                python = (args.reference_python if engine.startswith("transformers-")
                          else sys.executable)
                out = subprocess.run([python, __file__, "--child", engine, str(length)],
                                     check=True, capture_output=True, text=True,
                                     env=env).stdout
                row = json.loads(out.strip().splitlines()[-1])
                common.keep_best_round(best, (engine, length), row)
    common.report_best_rounds(
        best, "engine", f"batch 1, random weights, 2 threads; best of {args.rounds} rounds",
        args.out, digits=2, peak="process peak MB")


if __name__ == "__main__":
    main()
