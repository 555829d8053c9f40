"""Teacher against student, as `kbc distill` writes it to comparison.json: the task's
metrics, parameters, file sizes, Keras's time per text and, exported to a SavedModel and a
`.tflite` file, their sizes and time per request; `export_latency` times exports (`kbc demo`)."""

import os
import statistics
import tempfile
import time

# Requests (one text, or pair, question...) timed one per call on each export.
LATENCY_REQUESTS = 20
EXPORT_FORMATS = ("saved_model", "tflite")


def median_ms(call, requests):
    """Median milliseconds of `call(request)` over `requests`, after one warm-up call."""
    call(requests[0])
    times = []
    for request in requests:
        start = time.perf_counter()
        call(request)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def _keras_ms_per_text(model, task, data, preprocessor, repeats=10):
    """Keras's median time for one text (after a first, traced call)."""
    import tensorflow as tf

    from keras_bert_core.models.text_inputs import is_text_data

    dataset, _ = task.dataset(data, preprocessor, 1)
    batch = next(iter(dataset))
    x = batch[0] if isinstance(batch, tuple) else batch
    if is_text_data(x):  # texts the model preprocesses (an embedder's columns): one text
        x = model.preprocess_text(tf.nest.flatten(x)[0])
    return median_ms(lambda _: model.predict_on_batch(x), [None] * repeats)


def _weight_bytes(model):
    import numpy as np

    return int(sum(int(np.prod(w.shape)) * np.dtype(w.dtype).itemsize for w in model.weights))


def export_requests(task, data, count=LATENCY_REQUESTS):
    """The first `count` examples of `data` as an export's inputs: dicts keyed by the
    serving signature's text inputs (`kbc predict`'s JSON lines)."""
    return task.serving_requests(data, count)


def _loaded_export(kind, path):
    """A function answering one request dict from the export at `path`."""
    import numpy as np
    import tensorflow as tf

    from keras_bert_core.cli.predict import load_tflite
    from keras_bert_core.export import load_saved_model

    if kind == "saved_model":
        serve = load_saved_model(path).signatures["serving_default"]
        return lambda request: serve(**{k: tf.constant([v]) for k, v in request.items()})
    runner, _ = load_tflite(path)
    return lambda request: runner(**{k: np.array([v], dtype=object)
                                     for k, v in request.items()})


def export_latency(exports, requests):
    """`{name: {format: ms}}`: the median milliseconds of one request per call of each
    export in `exports` (`{name: {"saved_model" or "tflite": path}}`). The exports take
    turns at each request, so a machine's load weighs on each alike."""
    calls = {(name, kind): _loaded_export(kind, path)
             for name, paths in exports.items() for kind, path in paths.items()}
    times = {key: [] for key in calls}
    for call in calls.values():
        call(requests[0])  # traced, allocated
    for request in requests:
        for key, call in calls.items():
            start = time.perf_counter()
            call(request)
            times[key].append(time.perf_counter() - start)
    result = {name: {} for name in exports}
    for (name, kind), values in times.items():
        result[name][kind] = 1000 * statistics.median(values)
    return result


def _exports(models, task, preprocessor, folder):
    """`({name: {format: path}}, {name: {format: bytes}}, {name: {format: why not}})`: each
    model exported to a SavedModel and a float32 .tflite file under `folder`; a format
    the model cannot take is left out with the exporter's reason."""
    from keras_bert_core.cli import UserError
    from keras_bert_core.cli.export import export, tflite_input_kind

    paths, sizes, skipped = {}, {}, {}
    for name, model in models.items():
        paths[name], sizes[name] = {}, {}
        for kind in EXPORT_FORMATS:
            if kind == "tflite" and tflite_input_kind(preprocessor) == "ids":
                skipped.setdefault(name, {})[kind] = ("the .tflite file takes token ids, not "
                                                      "text (the app tokenizes)")
                continue
            output = os.path.join(folder, name)
            try:
                (path, size), = export(model, task, preprocessor, output,
                                       formats=(kind,)).items()
            except UserError as e:
                skipped.setdefault(name, {})[kind] = str(e)
                continue
            paths[name][kind], sizes[name][kind] = str(path), size
    return paths, sizes, skipped


def compare(task, models, data, preprocessor, batch_size, exports=True, timing_data=None):
    """`{"teacher": {...}, "student": {...}}`: each model's task metrics, parameters, weight
    bytes, `.keras` file bytes (a fine-tuned teacher's file also holds its optimizer's
    state) and Keras's milliseconds per text. `models` maps the two names to `(model, its
    .keras file)`. With `exports`, each model is also exported (to a scratch folder) as a
    SavedModel and a float32 `.tflite` file: `export_bytes` and `export_ms_per_text` per
    format, timed on the first requests of `data`, one per call, the four in turns.
    `timing_data`: the examples timed instead of `data` (then `data` may be None: no
    metrics)."""
    timed = data if timing_data is None else timing_data
    comparison = {name: {"metrics": ({} if data is None else
                                     task.evaluate(model, data, preprocessor, batch_size)),
                         "parameters": int(model.count_params()),
                         "weight_bytes": _weight_bytes(model),
                         "file_bytes": os.path.getsize(file),
                         "keras_ms_per_text": _keras_ms_per_text(model, task, timed,
                                                                 preprocessor)}
                  for name, (model, file) in models.items()}
    if not exports:
        return comparison
    with tempfile.TemporaryDirectory() as folder:
        paths, sizes, skipped = _exports({name: model for name, (model, _) in models.items()},
                                         task, preprocessor, folder)
        latency = export_latency(paths, export_requests(task, timed))
    for name, figures in comparison.items():
        figures["export_bytes"] = sizes[name]
        figures["export_ms_per_text"] = latency[name]
        if name in skipped:
            figures["exports_skipped"] = skipped[name]
    return comparison


def comparison_table(comparison):
    """The comparison as lines of text: a row per figure, a column per model."""
    teacher, student = comparison["teacher"], comparison["student"]
    rows = [(name, teacher["metrics"][name], student["metrics"].get(name))
            for name in teacher["metrics"] if isinstance(teacher["metrics"][name], float)]
    rows += [("parameters", teacher["parameters"], student["parameters"]),
             ("weight bytes", teacher["weight_bytes"], student["weight_bytes"]),
             ("model.keras bytes", teacher["file_bytes"], student["file_bytes"]),
             ("Keras ms per text", teacher["keras_ms_per_text"],
              student["keras_ms_per_text"])]
    for kind, title in (("saved_model", "SavedModel"), ("tflite", "TFLite")):
        if kind in teacher.get("export_bytes", {}) and kind in student["export_bytes"]:
            rows += [(f"{title} bytes", teacher["export_bytes"][kind],
                      student["export_bytes"][kind]),
                     (f"{title} ms per text", teacher["export_ms_per_text"][kind],
                      student["export_ms_per_text"][kind])]

    def shown(value):
        return f"{value:,}" if isinstance(value, int) else f"{value:.4g}"

    width = max(len(name) for name, _, _ in rows)
    lines = [f"{'':{width}}  {'teacher':>14}  {'student':>14}"]
    lines += [f"{name:{width}}  {shown(a):>14}  {shown(b):>14}" for name, a, b in rows]
    return lines
