"""`kbc evaluate`: score a fine-tuned model on labeled data, or an embedding model on a
retrieval set (`--queries`, `--corpus`, `--relevance`)."""

import json

from keras_bert_core.cli import UserError
from keras_bert_core.cli.finetuned import load_embedder, load_finetuned
from keras_bert_core.cli.messages import say
from keras_bert_core.cli.options import positive_int
from keras_bert_core.cli.run_dir import claim_output
from keras_bert_core.cli.tasks import add_data_options, data_settings, load_tfds
from keras_bert_core.files import replaced_when_complete


def add_arguments(parser):
    parser.add_argument("model", help="a fine-tuned .keras file (a kbc fine-tuning run's "
                                      "model.keras, also copied out of it), its run, or a "
                                      "preset folder; with --queries, any embedding model "
                                      "(a sentence-transformers folder too)")
    parser.add_argument("data", nargs="?", metavar="FILE",
                        help="labeled data, in the format the task trained on")
    parser.add_argument("--tfds", metavar="NAME", help="a TensorFlow Datasets task instead")
    parser.add_argument("--split", default="validation", help="--tfds split")
    parser.add_argument("--tfds-data-dir", metavar="DIR", help="where TFDS keeps its data")
    retrieval = parser.add_argument_group(
        "retrieval (embedding models; BEIR's layout: CSV, TSV or JSON lines)")
    retrieval.add_argument("--queries", metavar="FILE", help="the queries: _id (or id), text")
    retrieval.add_argument("--corpus", metavar="FILE",
                           help="the documents: _id (or id), text, optional title")
    retrieval.add_argument("--relevance", metavar="FILE",
                           help="query-id, corpus-id, optional score (0: not relevant); "
                                "every query needs a relevant document in the corpus")
    parser.add_argument("--batch-size", type=positive_int, default=32,
                        help="examples per batch")
    parser.add_argument("-o", "--output", metavar="JSON", help="also write the metrics here")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    add_data_options(parser, with_defaults=False)


RETRIEVAL_OPTIONS = ("queries", "corpus", "relevance")


def run(args):
    retrieval = [getattr(args, name) for name in RETRIEVAL_OPTIONS]
    if any(retrieval):
        if not all(retrieval):
            raise UserError("--queries, --corpus and --relevance go together: pass all three")
        if args.data is not None or args.tfds is not None:
            raise UserError("pass either a retrieval set (--queries ...) or data to score, "
                            "not both")
    elif (args.data is None) == (args.tfds is None):
        raise UserError("pass the data to score: a FILE, --tfds NAME, or a retrieval set "
                        "(--queries, --corpus, --relevance)")
    if args.output:
        claim_output(args.output, args.overwrite, make_parent=True,
                     inputs=[args.model, args.data, *retrieval])
    metrics = _retrieval_metrics(args, retrieval) if any(retrieval) else _task_metrics(args)
    text = json.dumps(metrics, indent=2)
    if args.output:
        with replaced_when_complete(args.output) as partial:
            with open(partial, "w", encoding="utf-8") as f:
                f.write(text + "\n")
    print(text)


def _task_metrics(args):
    model, task, preprocessor = load_finetuned(args.model)
    task.settings.update(data_settings(args))
    if args.tfds:
        data = load_tfds(task, args.tfds, args.split, args.tfds_data_dir)
    else:
        data = task.load(args.data)
    say(f"scoring {args.model} on {len(data)} {task.name} examples")
    return task.evaluate(model, data, preprocessor, args.batch_size)


def _retrieval_metrics(args, files):
    from keras_bert_core.tasks.embedding import load_retrieval
    from keras_bert_core.tasks.embedding.fine_tuning import score_embedder

    data = load_retrieval(*files)  # its errors before the model loads
    model, _ = load_embedder(args.model)
    say(f"scoring {args.model}: {len(data)} queries over {len(data.documents)} documents")
    return score_embedder(model, data, args.batch_size)
