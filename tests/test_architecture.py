"""The package's shape, as DESIGN.md states it: imports run one way (no cycle between modules,
nor between the folders of any one folder), no module over 400 lines, and private Keras /
TensorFlow names only in the two seam modules. Read from the source, imports inside
functions included, so nothing here imports the package."""

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "keras_bert_core"
MAX_LINES = 400
# The modules that may name private Keras / TensorFlow / LiteRT / tf.text things, each with a
# test per name (tests/test_keras_internals.py, tests/test_tensorflow_internals.py).
SEAMS = {"keras_bert_core/keras_internals.py", "keras_bert_core/tensorflow_internals.py"}

# Module paths that are not a library's public API.
_PRIVATE_MODULE = re.compile(
    r"^(keras\.src|tensorflow\.python|tensorflow\.lite\.python|tensorflow_text\.python"
    r"|tensorflow\.compiler|tf_keras\.src)(\.|$)|(^|\.)_(?!_)")


def _sources():
    return {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8")
            for path in sorted(PACKAGE.rglob("*.py"))}


def _module_name(relative):
    parts = relative[:-len(".py")].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(relative, tree, modules):
    """The package's modules that `tree` imports, each resolved to the module defining it."""
    name = _module_name(relative)
    package = name if relative.endswith("__init__.py") else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and target != name:
                found.add(target)
    return found


def _import_graph():
    sources = _sources()
    modules = {_module_name(relative) for relative in sources}
    return {_module_name(relative): _imports(relative, ast.parse(source), modules)
            for relative, source in sources.items()}


def _cycles(graph):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph.get(node, ()):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def _folder_graph(graph, modules):
    """Edges between the entries (sub-folders and modules) of each folder: an import from
    `a/b/x.py` of `a/c/y.py` is an edge from `a/b` to `a/c`."""
    packages = {name for name in modules if (PACKAGE.parent / name.replace(".", "/")).is_dir()}
    folders = {}
    for source, targets in graph.items():
        source_path = source.split(".") + ([""] if source in packages else [])
        for target in targets:
            target_path = target.split(".") + ([""] if target in packages else [])
            common = 0
            while (common < min(len(source_path), len(target_path)) - 1
                   and source_path[common] == target_path[common]):
                common += 1
            parent = "/".join(source_path[:common])
            ends = (source_path[common], target_path[common])
            # Two modules of one folder: the module graph has that edge already.
            both_modules = all(len(path) == common + 1 for path in (source_path, target_path))
            if ends[0] != ends[1] and "" not in ends and not both_modules:
                folders.setdefault(f"{parent}/{ends[0]}", set()).add(f"{parent}/{ends[1]}")
    return folders


def test_no_import_cycle_between_modules_or_folders():
    graph = _import_graph()
    cycles = set(_cycles(graph)) | set(_cycles(_folder_graph(graph, set(graph))))
    assert not cycles, f"import cycles: {sorted(sorted(cycle) for cycle in cycles)}"


def test_no_module_over_400_lines():
    lengths = {relative: source.count("\n") for relative, source in _sources().items()}
    long = {relative: count for relative, count in lengths.items() if count > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (one concept per file: split them): {long}"


def _defined_names(trees):
    """Names the package defines itself: functions, classes, variables, parameters, and
    attributes it sets on `self` or `cls`."""
    names = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                  and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                names.add(node.attr)
    return names


def _private_names(tree, defined):
    """Private module paths imported, and private attributes the package does not define."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            modules = [node.module or ""]
        else:
            modules = []
        for module in modules:
            if not module.startswith("keras_bert_core") and _PRIVATE_MODULE.search(module):
                found.add(module)
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__") and node.attr not in defined):
            found.add(node.attr)
    return found


def test_private_keras_and_tensorflow_names_only_in_the_seam_modules():
    sources = _sources()
    trees = {relative: ast.parse(source) for relative, source in sources.items()}
    defined = _defined_names(trees.values())
    used = {(relative, name) for relative, tree in trees.items() if relative not in SEAMS
            for name in _private_names(tree, defined)}
    assert not used, ("private names outside keras_internals.py / tensorflow_internals.py "
                      f"(add a function and a test there): {sorted(used)}")
