"""What the parity tests share: reading a fixture's reference outputs (written by the
make_*_fixtures.py scripts under transformers), building encoder inputs, and the difference
they compare with their tolerance."""

import os

import numpy as np


def read_reference(folder, name):
    """The arrays `folder/name/reference.npz` holds (inputs and transformers' outputs)."""
    return np.load(os.path.join(folder, name, "reference.npz"))


def encoder_inputs(ids, mask, segments=None):
    """int32 encoder inputs from token ids, an attention mask and segment ids (zeros if
    None)."""
    return {"token_ids": ids.astype("int32"),
            "segment_ids": (np.zeros_like(ids, "int32") if segments is None
                            else segments.astype("int32")),
            "padding_mask": mask.astype("int32")}


def reference_inputs(reference):
    """The encoder inputs a reference was computed on (Hugging Face's key names)."""
    return encoder_inputs(reference["input_ids"], reference["attention_mask"],
                          reference["token_type_ids"])


def max_diff(actual, expected):
    return float(np.abs(np.asarray(actual) - expected).max())
