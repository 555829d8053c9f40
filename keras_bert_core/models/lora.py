"""Low-rank adapters (LoRA) on the encoder's projections: enable, save alone, load, merge.

LoRA (Hu et al., 2021) freezes a pretrained kernel `W` and learns `W + (alpha / rank) * A B`
with `A` `[in, rank]` and `B` `[rank, out]`: a fine-tune trains and stores a small fraction of
the weights. The encoder's projections are `keras.layers.Dense` subclasses, so this module
uses Keras's own `Dense.enable_lora` (A from `he_uniform`, B zeros: a new adapter changes
nothing; A and B float32 under mixed precision too).

What trains after `enable_lora`, as in common LoRA fine-tuning (PEFT's defaults): the
adapters and, in a task model, the task head (every weight outside the encoder, new and
randomly initialized); every encoder weight (kernels, biases, LayerNorms, embeddings,
pooler) is frozen unless `also_train` names it. What `save_lora_weights` stores is exactly
what trains; the frozen weights come from the checkpoint the adapters were trained on.

For export, `merge_lora` returns a plain model of the same class and config whose kernels
hold `W + (alpha / rank) * A B`: `export_saved_model` and `export_tflite` take it as any
other model, and its graph has no adapter ops (`export_saved_model` also takes the LoRA
model itself, which serves the same outputs and computes `W + A B` in the graph). A `.keras`
file of a LoRA model holds such a merged model too: Keras writes the merged kernel and no
adapters, so the loaded model has none; keep the adapters with `save_lora_weights`.

`save_weights` files lose the adapters the same way, and `load_weights` then zeros A and B,
where neither gets a gradient again: a backup to resume training from also needs
`add_lora_state` / `restore_lora_state` (`training.StepBackup` calls them).
"""

import dataclasses
import json

import keras
import numpy as np

from keras_bert_core.errors import CheckpointError, CheckpointMismatchError
from keras_bert_core.models.encoder import BertEncoder

# Target name -> the projection of a `TransformerEncoderBlock` it adapts.
PROJECTIONS = {
    "query": lambda block: block.attention.query,
    "key": lambda block: block.attention.key,
    "value": lambda block: block.attention.value,
    "attention_output": lambda block: block.attention.output_dense,
    "intermediate": lambda block: block.intermediate,
    "output": lambda block: block.output_dense,
}
# Shorthands accepted in `targets`.
TARGET_GROUPS = {
    "attention": ("query", "key", "value", "attention_output"),
    "feed_forward": ("intermediate", "output"),
    "all": tuple(PROJECTIONS),
}
# Encoder weights that `also_train` can keep trainable.
ALSO_TRAIN = ("bias", "layer_norm", "pooler")
FILE_FORMAT = "keras_bert_core.lora"
FILE_VERSION = 1


@dataclasses.dataclass(frozen=True)
class LoraSummary:
    """What `enable_lora` adapted, and how many parameters train.

    Attributes:
        rank: the adapters' rank.
        alpha: their scale numerator (the update is `alpha / rank * A B`).
        targets: the projection names adapted (keys of `PROJECTIONS`).
        also_train: the encoder weights kept trainable besides the adapters.
        layers: the adapted layers, one per distinct projection (shared ALBERT blocks once).
        adapter_params: parameters in the adapters' A and B matrices.
        trainable_params: parameters that train (adapters, head, `also_train`).
        total_params: every parameter of the model, adapters included.

    `str()` gives a two-line report.

    Example:
    >>> import keras_bert_core as kbc
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> summary = kbc.enable_lora(encoder, rank=4)
    >>> summary.adapter_params == 2 * 2 * (2 * 4 * 128)  # 2 blocks x (query, value)
    True
    >>> print(summary)  # doctest: +ELLIPSIS
    LoRA rank 4 (alpha 4) on query, value: 4 layers, 4,096 adapter parameters
    trainable: 4,096 of ... parameters (...%)
    """

    rank: int
    alpha: float
    targets: tuple
    also_train: tuple
    layers: tuple
    adapter_params: int
    trainable_params: int
    total_params: int

    def __str__(self):
        alpha = f"{self.alpha:g}"
        share = 100 * self.trainable_params / max(self.total_params, 1)
        return (f"LoRA rank {self.rank} (alpha {alpha}) on {', '.join(self.targets)}: "
                f"{len(self.layers)} layers, {self.adapter_params:,} adapter parameters\n"
                f"trainable: {self.trainable_params:,} of {self.total_params:,} parameters "
                f"({share:.2f}%)")


def _encoder_of(model):
    if isinstance(model, BertEncoder):
        return model
    encoder = getattr(model, "encoder", None)
    if isinstance(encoder, BertEncoder):
        return encoder
    raise TypeError(f"LoRA needs a keras_bert_core task model or BertEncoder, got "
                    f"{type(model).__name__}")


def _targets(targets):
    if isinstance(targets, str):
        targets = (targets,)
    names = []
    for target in targets:
        for name in TARGET_GROUPS.get(target, (target,)):
            if name not in PROJECTIONS:
                raise ValueError(f"unknown LoRA target {target!r}: choose from "
                                 f"{[*PROJECTIONS, *TARGET_GROUPS]}")
            if name not in names:
                names.append(name)
    if not names:
        raise ValueError("targets is empty: name at least one projection, e.g. "
                         "('query', 'value')")
    return tuple(name for name in PROJECTIONS if name in names)


def _projections(encoder, targets=tuple(PROJECTIONS)):
    """`(name, layer, target)` for each distinct projection: ALBERT's blocks shared across
    layers are `encoder.layer_groups`, each listed once."""
    for block in encoder.layer_groups:
        for target in targets:
            layer = PROJECTIONS[target](block)
            prefix = f"{block.name}/attention/" if target in TARGET_GROUPS["attention"] else (
                f"{block.name}/")
            yield prefix + layer.name, layer, target


def _adapted(encoder):
    return [(name, layer, target) for name, layer, target in _projections(encoder)
            if layer.lora_enabled]


def has_lora(model):
    """Whether `model` (any Keras model) has LoRA adapters from `enable_lora`.

    Example:
    >>> import keras_bert_core as kbc
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> has_lora(encoder)
    False
    >>> _ = kbc.enable_lora(encoder, rank=2)
    >>> has_lora(encoder), has_lora(kbc.merge_lora(encoder))
    (True, False)
    """
    try:
        return bool(_adapted(_encoder_of(model)))
    except TypeError:  # not a keras_bert_core model: no adapters of ours
        return False


def _unique(variables):
    seen, unique = set(), []
    for variable in variables:
        if id(variable) not in seen:
            seen.add(id(variable))
            unique.append(variable)
    return unique


def _size(variables):
    return sum(int(np.prod(variable.shape)) for variable in _unique(variables))


def _also_trainable(encoder, also_train):
    """The encoder weights that `also_train` keeps trainable."""
    weights = []
    if "pooler" in also_train and encoder.pooler is not None:
        weights += encoder.pooler.weights
    for layer in encoder._flatten_layers(include_self=False):
        if "layer_norm" in also_train and isinstance(layer, keras.layers.LayerNormalization):
            weights += layer.weights
        if ("bias" in also_train and isinstance(layer, keras.layers.Dense)
                and layer is not encoder.pooler and layer.bias is not None):
            weights.append(layer.bias)
    return weights


def _kept_trainable(encoder):
    """Which `ALSO_TRAIN` groups are trainable now (read back from the variables)."""
    return tuple(group for group in ALSO_TRAIN
                 if (weights := _also_trainable(encoder, (group,)))
                 and all(weight.trainable for weight in weights))


def lora_summary(model):
    """The `LoraSummary` of a model on which `enable_lora` (or `load_lora_weights`) ran.

    Example:
    >>> import keras_bert_core as kbc
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> _ = kbc.enable_lora(encoder, rank=2, targets="attention")
    >>> lora_summary(encoder).targets
    ('query', 'key', 'value', 'attention_output')
    """
    encoder = _encoder_of(model)
    adapted = _adapted(encoder)
    if not adapted:
        raise ValueError(f"{model.name} has no LoRA adapters: call enable_lora first")
    first = adapted[0][1]
    targets = tuple(target for target in PROJECTIONS
                    if any(t == target for _, _, t in adapted))
    return LoraSummary(
        rank=int(first.lora_rank), alpha=float(first.lora_alpha), targets=targets,
        also_train=_kept_trainable(encoder), layers=tuple(name for name, _, _ in adapted),
        adapter_params=_size([v for _, layer, _ in adapted
                              for v in (layer.lora_kernel_a, layer.lora_kernel_b)]),
        trainable_params=_size(model.trainable_weights), total_params=_size(model.weights))


def enable_lora(model, rank, targets=("query", "value"), alpha=None, also_train=()):
    """Adds rank-`rank` adapters to the encoder's projections and freezes the rest of it.

    Each adapted `Dense` computes `x (W + alpha / rank * A B) + b` with `W` frozen (Keras's
    `Dense.enable_lora`). Afterwards the model trains only the adapters, the task head (every
    weight outside the encoder) and the encoder weights named in `also_train`. Blocks shared
    across layers (ALBERT's `num_layer_groups`) get one adapter each, trained by every layer
    that uses them. A new adapter leaves the outputs unchanged (B starts at zero).

    Call it on a model with its pretrained weights loaded, before `fit`. A model already
    trained with its optimizer is compiled again (same arguments, fresh optimizer state), as
    the trainable weights change. LoRA usually wants a larger learning rate than full
    fine-tuning (in the LoRA paper, 2e-4 to 5e-4 for RoBERTa), e.g.
    `model.compile(optimizer=kbc.BertAdamW(5e-4))`.

    Args:
        model: a keras_bert_core task model (`BertClassifier`, `BertSpanLabeler`,
            `BertTokenClassifier`, `BertMultipleChoice`, `BertPretrainer`) or a `BertEncoder`.
        rank: the adapters' rank (a positive int).
        targets: projections of every block to adapt: `"query"`, `"key"`, `"value"`,
            `"attention_output"` (attention), `"intermediate"`, `"output"` (feed-forward),
            or the groups `"attention"`, `"feed_forward"`, `"all"`.
        alpha: scale numerator; `None` means `rank` (a scale of 1, Keras's default).
        also_train: encoder weights kept trainable too: any of `"bias"` (every dense
            layer's bias, BitFit-style), `"layer_norm"` (every LayerNorm's gamma and beta),
            `"pooler"`.

    Returns a `LoraSummary` (`print` it for trainable vs total parameters).

    Example:
    >>> import numpy as np
    >>> import keras_bert_core as kbc
    >>> encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100))
    >>> model = kbc.BertClassifier(encoder, num_classes=2)
    >>> summary = kbc.enable_lora(model, rank=4, targets=("query", "value"))
    >>> summary.trainable_params == summary.adapter_params + 128 * 2 + 2  # + the head
    True
    >>> for w in model.trainable_weights:
    ...     print(w.path)
    block_0/attention/query/lora_kernel_a
    block_0/attention/query/lora_kernel_b
    block_0/attention/value/lora_kernel_a
    block_0/attention/value/lora_kernel_b
    block_1/attention/query/lora_kernel_a
    block_1/attention/query/lora_kernel_b
    block_1/attention/value/lora_kernel_a
    block_1/attention/value/lora_kernel_b
    classifier/dense/kernel
    classifier/dense/bias
    >>> ids = np.array([[2, 10, 11, 3], [2, 12, 3, 0]], "int32")
    >>> x = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...      "padding_mask": (ids > 0).astype("int32")}
    >>> history = model.fit(x, np.array([1, 0]), verbose=0)
    """
    encoder = _encoder_of(model)
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 1:
        raise ValueError(f"rank must be a positive int, got {rank!r}")
    targets = _targets(targets)
    also_train = (also_train,) if isinstance(also_train, str) else tuple(also_train)
    unknown = [name for name in also_train if name not in ALSO_TRAIN]
    if unknown:
        raise ValueError(f"unknown also_train {unknown}: choose from {list(ALSO_TRAIN)}")
    already = [name for name, _, _ in _adapted(encoder)]
    if already:
        raise ValueError(f"LoRA is already enabled on {', '.join(already)}; enable it once "
                         f"per model (merge_lora gives a plain model to start again)")
    if not encoder.built:
        raise ValueError("build the encoder before enabling LoRA")
    for name, layer, _ in _projections(encoder, targets):
        if rank > min(layer.kernel.shape):
            # A @ B of a kernel [n, m] has rank min(n, m) at most: more adds only parameters.
            raise ValueError(f"rank {rank} is larger than {name}'s kernel "
                             f"({' x '.join(map(str, layer.kernel.shape))}): choose a rank "
                             f"of at most {min(layer.kernel.shape)}")
    adapters = []
    for _, layer, _ in _projections(encoder, targets):
        layer.enable_lora(int(rank), lora_alpha=alpha)
        adapters += [layer.lora_kernel_a, layer.lora_kernel_b]
    keep = {id(v) for v in [*adapters, *_also_trainable(encoder, also_train)]}
    for variable in _unique(encoder.weights):
        variable.trainable = id(variable) in keep
    _compile_again_if_trained(model)
    return lora_summary(model)


def _compile_again_if_trained(model):
    """An optimizer built for the old trainable weights, or a traced train step, does not fit
    the new ones: compile again with the same arguments."""
    optimizer = getattr(model, "optimizer", None)
    trained = ((optimizer is not None and optimizer.built)
               or getattr(model, "train_function", None) is not None)
    if getattr(model, "compiled", False) and trained:
        model.compile_from_config(model.get_compile_config())


def _named(variables):
    """`{path: variable}`; the paths (`block_0/attention/query/lora_kernel_a`) are the same
    in every model built from the same config."""
    named = {}
    for variable in _unique(variables):
        if variable.path in named:
            raise ValueError(f"two weights share the path {variable.path!r}")
        named[variable.path] = variable
    return named


def save_lora_weights(model, filepath):
    """Writes what a LoRA fine-tune trained, and nothing else, to an HDF5 file.

    The file holds every trainable weight of `model` by path: the adapters' A and B
    matrices, the task head, and the encoder weights kept trainable by `also_train`; and, as
    attributes, the rank, alpha, targets and `also_train`, so `load_lora_weights` can enable
    the same adapters on a fresh model. The frozen weights are not in it: load them from the
    checkpoint the fine-tune started from. `.lora.h5` is the usual suffix.

    Args:
        model: a model on which `enable_lora` ran.
        filepath: the file to write.

    Example:
    >>> import os, tempfile
    >>> import keras_bert_core as kbc
    >>> model = kbc.BertClassifier(
    ...     kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100)), num_classes=2)
    >>> _ = kbc.enable_lora(model, rank=4)
    >>> path = os.path.join(tempfile.mkdtemp(), "adapters.lora.h5")
    >>> kbc.save_lora_weights(model, path)
    >>> os.path.getsize(path) < 64 * 1024  # the whole model: about 1 MB
    True
    """
    import h5py

    summary = lora_summary(model)
    weights = _named(model.trainable_weights)
    with h5py.File(filepath, "w") as f:
        f.attrs.update({
            "format": FILE_FORMAT, "version": FILE_VERSION, "rank": summary.rank,
            "alpha": summary.alpha, "targets": json.dumps(summary.targets),
            "also_train": json.dumps(summary.also_train), "model": type(model).__name__})
        for path, variable in weights.items():
            f.create_dataset(path, data=keras.ops.convert_to_numpy(variable))


def _read(filepath):
    import h5py

    try:
        f = h5py.File(filepath, "r")
    except OSError as error:
        raise CheckpointError(f"{filepath}: cannot read LoRA weights ({error})") from None
    with f:
        if f.attrs.get("format") != FILE_FORMAT:
            raise CheckpointError(f"{filepath}: not a LoRA weights file (save_lora_weights "
                                  f"writes them)")
        arrays = {}
        f.visititems(lambda name, item: arrays.__setitem__(name, item[()])
                     if isinstance(item, h5py.Dataset) else None)
        settings = {"rank": int(f.attrs["rank"]), "alpha": float(f.attrs["alpha"]),
                    "targets": tuple(json.loads(f.attrs["targets"])),
                    "also_train": tuple(json.loads(f.attrs["also_train"]))}
    return settings, arrays


def _expected(model, settings):
    """`({path: shape} of the weights a file may hold, the paths it must hold)` for loading
    `settings`' adapters into `model`, before they are enabled on it (a file that does not
    fit then leaves the model as it was)."""
    encoder = _encoder_of(model)
    shapes = {path: tuple(v.shape) for path, v in _named(model.weights).items()}
    if _adapted(encoder):
        return shapes, set(_named(model.trainable_weights))
    required = set()
    for _, layer, _ in _projections(encoder, _targets(settings["targets"])):
        prefix = layer._kernel.path.rsplit("/", 1)[0]
        (width_in, width_out), rank = layer._kernel.shape, settings["rank"]
        shapes[f"{prefix}/lora_kernel_a"] = (width_in, rank)
        shapes[f"{prefix}/lora_kernel_b"] = (rank, width_out)
        required |= {f"{prefix}/lora_kernel_a", f"{prefix}/lora_kernel_b"}
    trainable = _named(model.trainable_weights)
    in_encoder = {id(v) for v in encoder.weights}
    kept = {id(v) for v in _also_trainable(encoder, settings["also_train"])}
    required |= {path for path, v in trainable.items()
                 if id(v) not in in_encoder or id(v) in kept}
    return shapes, required


def load_lora_weights(model, filepath):
    """Loads a `save_lora_weights` file into `model`, enabling its adapters first if needed.

    On a model without adapters (a fresh one holding the base checkpoint's weights) this runs
    `enable_lora` with the file's rank, alpha, targets and `also_train`, then assigns every
    weight in the file. A file that does not fit raises `CheckpointMismatchError` before
    anything changes; it names every weight that trains in the model and is not in the file,
    every one in the file that the model lacks, and every mis-shaped one with both shapes
    (another rank, width or head size).

    Args:
        model: a task model or `BertEncoder` of the configuration the adapters were
            trained on.
        filepath: a file written by `save_lora_weights`.

    Returns the model's `LoraSummary`.

    Example:
    >>> import os, tempfile
    >>> import keras_bert_core as kbc
    >>> config = kbc.BertConfig.preset("tiny", vocab_size=100)
    >>> model = kbc.BertClassifier(kbc.BertEncoder(config), num_classes=2)
    >>> _ = kbc.enable_lora(model, rank=4)
    >>> path = os.path.join(tempfile.mkdtemp(), "adapters.lora.h5")
    >>> kbc.save_lora_weights(model, path)
    >>> # In practice `fresh` holds the base checkpoint's weights (kbc.load_checkpoint).
    >>> fresh = kbc.BertClassifier(kbc.BertEncoder(config), num_classes=2)
    >>> kbc.load_lora_weights(fresh, path).rank
    4
    >>> other = kbc.BertClassifier(kbc.BertEncoder(config), num_classes=3)
    >>> kbc.load_lora_weights(other, path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    keras_bert_core.errors.CheckpointMismatchError: ...
      mis-shaped (2):
        classifier/dense/bias: file (2,), model (3,)
        classifier/dense/kernel: file (128, 2), model (128, 3)
    """
    settings, arrays = _read(filepath)
    shapes, required = _expected(model, settings)
    missing = sorted(required - set(arrays))
    unexpected = sorted(set(arrays) - set(shapes))
    mis_shaped = sorted(
        f"{path}: file {tuple(array.shape)}, model {shapes[path]}"
        for path, array in arrays.items()
        if path in shapes and tuple(array.shape) != shapes[path])
    if missing or unexpected or mis_shaped:
        raise CheckpointMismatchError(filepath, missing=missing, unexpected=unexpected,
                                      mis_shaped=mis_shaped)
    if not _adapted(_encoder_of(model)):
        enable_lora(model, settings["rank"], settings["targets"], alpha=settings["alpha"],
                    also_train=settings["also_train"])
    weights = _named(model.weights)
    for path, array in arrays.items():
        weights[path].assign(array)
    return lora_summary(model)


def merge_lora(model):
    """A plain copy of `model` whose kernels include the adapters: `W + alpha / rank * A B`.

    The copy has the same class and config, no LoRA variables, every weight trainable and
    the task's default compile settings; its outputs equal the LoRA model's to float
    rounding. It is what `export_saved_model`, `export_tflite` and `.keras` files take (the
    merge is computed in float64 and stored in the kernel's dtype). `model` is unchanged.

    Args:
        model: a task model or `BertEncoder` on which `enable_lora` ran.

    Example:
    >>> import numpy as np
    >>> import keras_bert_core as kbc
    >>> model = kbc.BertClassifier(
    ...     kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=100)), num_classes=2)
    >>> _ = kbc.enable_lora(model, rank=4)
    >>> merged = kbc.merge_lora(model)
    >>> any("lora" in w.path for w in merged.weights), len(merged.trainable_weights)
    (False, 41)
    >>> ids = np.array([[2, 10, 11, 3]], "int32")
    >>> x = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
    ...      "padding_mask": np.ones_like(ids)}
    >>> np.allclose(merged.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-5)
    True
    """
    adapted = _adapted(_encoder_of(model))
    if not adapted:
        raise ValueError(f"{model.name} has no LoRA adapters to merge")
    kernels = {}
    for _, layer, _ in adapted:
        kernel, a, b = (np.asarray(keras.ops.convert_to_numpy(v), "float64")
                        for v in (layer._kernel, layer.lora_kernel_a, layer.lora_kernel_b))
        kernels[layer._kernel.path] = kernel + (layer.lora_alpha / layer.lora_rank) * (a @ b)
    merged = type(model).from_config(model.get_config())
    source = _named(model.weights)
    target = _named(merged.weights)
    lora = {path for path in source if path.rsplit("/", 1)[-1].startswith("lora_kernel_")}
    if set(target) != set(source) - lora:
        raise RuntimeError(
            f"the rebuilt {type(model).__name__} does not have the LoRA model's weights: "
            f"missing {sorted(set(source) - lora - set(target))}, "
            f"extra {sorted(set(target) - set(source))}")
    for path, variable in target.items():
        value = kernels[path] if path in kernels else keras.ops.convert_to_numpy(source[path])
        variable.assign(np.asarray(value).astype(variable.dtype))
    return merged


# The group of a Keras weights file that `add_lora_state` writes.
STATE_GROUP = "keras_bert_core_lora_state"


def _state_variables(model):
    """`{path: variable}` of what `save_weights` loses: each adapted kernel, A and B."""
    return _named([variable for _, layer, _ in _adapted(_encoder_of(model))
                   for variable in (layer._kernel, layer.lora_kernel_a, layer.lora_kernel_b)])


def add_lora_state(model, weights_file):
    """Adds the adapters and the kernels under them to a `model.save_weights` file.

    Keras writes an adapted layer's merged kernel `W + alpha / rank * A B` and neither `W`
    nor A and B; `load_weights` puts the merged kernel in `W` and zeros A and B. The outputs
    are the same, but A = B = 0 gives both zero gradients, so training would go on without
    the adapters. This writes `W`, A and B into the file's own group, which `load_weights`
    passes over and `restore_lora_state` reads back. A model without adapters: no change.

    Args:
        model: the model `save_weights` wrote.
        weights_file: the `.weights.h5` file it wrote.

    Example:
    >>> import os, tempfile
    >>> import keras_bert_core as kbc
    >>> config = kbc.BertConfig.preset("tiny", vocab_size=100)
    >>> model = kbc.BertClassifier(kbc.BertEncoder(config), num_classes=2)
    >>> _ = kbc.enable_lora(model, rank=2)
    >>> b = model.encoder.blocks[0].attention.query.lora_kernel_b
    >>> _ = b.assign(b + 1.0)
    >>> path = os.path.join(tempfile.mkdtemp(), "state.weights.h5")
    >>> model.save_weights(path)
    >>> add_lora_state(model, path)
    >>> model.load_weights(path)
    >>> float(b.numpy().min())  # zeroed by Keras
    0.0
    >>> restore_lora_state(model, path)
    >>> float(b.numpy().min())
    1.0
    """
    import h5py

    variables = _state_variables(model) if has_lora(model) else {}
    if not variables:
        return
    with h5py.File(weights_file, "a") as f:
        group = f.require_group(STATE_GROUP)
        for path, variable in variables.items():
            group.create_dataset(path, data=keras.ops.convert_to_numpy(variable))


def restore_lora_state(model, weights_file):
    """Puts back what `add_lora_state` wrote, after `model.load_weights(weights_file)`.

    A model without adapters: no change. A file without that state, or whose state does not
    fit the model's adapters, raises `CheckpointError` (naming the file).

    Args:
        model: the model the file was loaded into.
        weights_file: a `save_weights` file completed by `add_lora_state`.
    """
    import h5py

    variables = _state_variables(model) if has_lora(model) else {}
    if not variables:
        return
    with h5py.File(weights_file, "r") as f:
        group = f.get(STATE_GROUP)
        if group is None:
            raise CheckpointError(f"{weights_file}: holds no LoRA adapters (written by "
                                  "save_weights alone, which keeps merged kernels only)")
        for path, variable in variables.items():
            if path not in group or group[path].shape != tuple(variable.shape):
                found = group[path].shape if path in group else "none"
                raise CheckpointError(f"{weights_file}: LoRA state {path} is {found}, the "
                                      f"model's {tuple(variable.shape)}")
        for path, variable in variables.items():
            variable.assign(group[path][()])

