"""`kbc pretrain --objective`: masked LM (BERT's, the default) or ELECTRA's replaced-token
detection, and the pretraining model each trains."""

from keras_bert_core.cli import UserError
from keras_bert_core.cli.messages import say
from keras_bert_core.cli.options import positive_float, rate

OBJECTIVES = ("mlm", "electra")
# The generator's options and their defaults (None until --objective electra fills them in,
# so that one given without it can be refused).
_ELECTRA_OPTIONS = {"generator_size": ("--generator-size", 0.25),
                    "rtd_weight": ("--rtd-weight", 50.0)}


def add_objective_arguments(parser):
    group = parser.add_argument_group("objective")
    group.add_argument("--objective", choices=OBJECTIVES, default="mlm",
                       help="mlm: masked LM (with --pair-task's head); electra: replaced-token "
                            "detection (Clark et al., 2020): a small generator fills the "
                            "masked positions with its samples and the model learns which "
                            "tokens were replaced (no pair task); fine-tune the run as any "
                            "(default: mlm)")
    group.add_argument("--generator-size", type=rate, metavar="FRACTION",
                       help="--objective electra: the generator's width, heads and "
                            "feed-forward as a fraction of the model's (default: 0.25)")
    group.add_argument("--rtd-weight", type=positive_float, metavar="WEIGHT",
                       help="--objective electra: the weight of the replaced-token loss "
                            "beside the generator's masked-LM loss (default: 50, ELECTRA's)")


def check_objective(args):
    """ELECTRA trains no pair head: its pair task is none (refused when given otherwise);
    the generator's options go with `--objective electra` only."""
    for name, (option, default) in _ELECTRA_OPTIONS.items():
        if args.objective != "electra" and getattr(args, name) is not None:
            raise UserError(f"{option} sets ELECTRA's generator; it needs --objective electra")
        if args.objective == "electra" and getattr(args, name) is None:
            setattr(args, name, default)
    if args.objective != "electra":
        return
    if args.pair_task is None and args.next_sentence:
        args.pair_task = "none"
    elif args.pair_task not in (None, "none"):
        raise UserError(f"--objective electra trains no sentence-pair head: leave out "
                        f"--pair-task {args.pair_task} (or pretrain with --objective mlm)")


def make_pretrainer(args, encoder, loaded=None, source=None):
    """The pretraining model of `args.objective` on `encoder`; `loaded` (the pretrainer
    `load_pretrainer` read from `--checkpoint` at `source`) gives the heads it has."""
    from keras_bert_core.checkpoints import load_head_weights
    from keras_bert_core.models import BertPretrainer, ElectraPretrainer

    if args.objective == "electra":
        if loaded is not None:
            say(f"{source}: the generator and the replaced-token head start from scratch; "
                "the model continues from its weights")
        return ElectraPretrainer(encoder, generator_size=args.generator_size,
                                 rtd_weight=args.rtd_weight, seed=args.seed)
    pretrainer = BertPretrainer(encoder, next_sentence=args.next_sentence)
    if loaded is not None:
        # A next-sentence head continuing a masked-LM-only checkpoint has none.
        missing = load_head_weights(pretrainer, loaded.get_head_weights())
        if missing:
            say(f"{source}: no pretrained weights for {missing}; they start from scratch")
    return pretrainer


def summary(metrics):
    """The last epoch's scores, as the run's closing line gives them."""
    line = f"loss {metrics.get('loss', float('nan')):.3f}, " \
           f"MLM accuracy {metrics.get('mlm_accuracy', float('nan')):.3f}"
    if "rtd_accuracy" in metrics:
        line += f", replaced-token accuracy {metrics['rtd_accuracy']:.3f}"
    return line
