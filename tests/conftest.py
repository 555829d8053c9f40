import os

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
