"""`kbc embed`: the vectors of texts by an embedding model, as .npy or JSON lines."""

import json
import os

import numpy as np

from keras_bert_core.cli import UserError
from keras_bert_core.cli.finetuned import load_embedder
from keras_bert_core.cli.messages import say
from keras_bert_core.cli.options import positive_int
from keras_bert_core.cli.run_dir import claim_output
from keras_bert_core.cli.tasks import check_input_text, read_lines
from keras_bert_core.files import replaced_when_complete

OUTPUT_SUFFIXES = (".npy", ".jsonl")


def add_arguments(parser):
    parser.add_argument("model", help="an embedding model: a `kbc finetune --task embed` run "
                                      "or its model.keras, a preset, a sentence-transformers "
                                      "folder")
    parser.add_argument("-i", "--input", metavar="FILE",
                        help="the texts, one a line (default: stdin)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="vectors.npy (float32 [texts, dim], in input order) or "
                             "vectors.jsonl ({\"text\", \"vector\"} a line); default: JSON "
                             "lines on stdout")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    parser.add_argument("--batch-size", type=positive_int, default=32, help="texts per batch")
    parser.add_argument("--prompt-name", metavar="NAME",
                        help="put the model's prompt NAME (e.g. query, document) before each "
                             "text (default: the model's default prompt, if any)")


def run(args):
    if args.output and os.path.splitext(args.output)[1] not in OUTPUT_SUFFIXES:
        raise UserError(f"--output {args.output}: write vectors to a .npy or .jsonl file")
    check_input_text(args.input, "embed", "nothing to embed")
    if args.output:
        claim_output(args.output, args.overwrite, make_parent=True,
                     inputs=[args.model, args.input])
    model, _ = load_embedder(args.model)
    try:
        prompt = model.prompt(args.prompt_name)
    except ValueError as e:
        raise UserError(f"--prompt-name {args.prompt_name}: {e}") from None
    texts = read_lines(args.input)
    vectors = np.asarray(model.predict(texts, batch_size=args.batch_size, verbose=0,
                                       prompt=prompt), "float32")
    if args.output is None:
        for text, vector in zip(texts, vectors, strict=True):
            print(json.dumps({"text": text, "vector": vector.tolist()}))
        return
    with replaced_when_complete(args.output) as partial:
        if args.output.endswith(".npy"):
            with open(partial, "wb") as f:
                np.save(f, vectors)
        else:
            with open(partial, "w", encoding="utf-8") as f:
                for text, vector in zip(texts, vectors, strict=True):
                    f.write(json.dumps({"text": text, "vector": vector.tolist()}) + "\n")
    say(f"{len(texts)} vectors of {vectors.shape[1]} values -> {args.output}")
