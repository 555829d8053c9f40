"""sentence-transformers folders in and out: parity with sentence-transformers' own vectors
on fixtures `make_sentence_transformers_fixtures.py` wrote, round trips, clear errors."""

import json
import os
import shutil

import numpy as np
import pytest

import keras_bert_core as kbc
from keras_bert_core.checkpoints import detect_format, huggingface, load_checkpoint
from keras_bert_core.errors import CheckpointError
from tests.helpers import encoder_batch

DATA = os.path.join(os.path.dirname(__file__), "data", "sentence_transformers")
VARIANTS = ("mean", "cls", "max", "mean_sqrt_len", "last_token", "cls_mean", "dense_prompts")


@pytest.fixture(scope="module")
def reference():
    with open(os.path.join(DATA, "texts.json"), encoding="utf-8") as f:
        texts = json.load(f)
    return texts, dict(np.load(os.path.join(DATA, "reference.npz")))


def assemble(folder, variant):
    """A sentence-transformers folder: the shared encoder files with a variant's modules."""
    shutil.copytree(os.path.join(DATA, "encoder"), folder)
    shutil.copytree(os.path.join(DATA, "variants", variant), folder, dirs_exist_ok=True)
    return str(folder)


@pytest.mark.parametrize("variant", VARIANTS)
def test_vectors_equal_sentence_transformers(tmp_path, reference, variant):
    texts, vectors = reference
    embedder, preprocessor = kbc.from_preset(assemble(tmp_path / variant, variant))
    assert type(embedder).__name__ == "BertEmbedder" and preprocessor.seq_length == 32
    got = embedder.predict(texts["texts"], verbose=0)
    assert got.dtype == np.float32 and got.shape == vectors[variant].shape
    np.testing.assert_allclose(got, vectors[variant], atol=1e-5, rtol=0)
    if variant == "dense_prompts":  # default prompt "query", then the others
        assert embedder.default_prompt_name == "query"
        np.testing.assert_allclose(embedder.predict(texts["texts"], prompt_name="document",
                                                    verbose=0),
                                   vectors["dense_prompts_document"], atol=1e-5, rtol=0)
        np.testing.assert_allclose(embedder.predict(texts["texts"], prompt="", verbose=0),
                                   vectors["dense_prompts_none"], atol=1e-5, rtol=0)


def test_all_minilm_l6_v2_equals_sentence_transformers(minilm_dir, reference):
    texts, vectors = reference
    embedder, preprocessor = kbc.from_preset(minilm_dir)
    assert (embedder.pooling, embedder.normalize, preprocessor.seq_length) == ("mean", True, 256)
    np.testing.assert_allclose(embedder.predict(texts["minilm_texts"], verbose=0),
                               vectors["minilm"], atol=1e-5, rtol=0)


def test_a_folder_keras_bert_core_wrote_loads_in_sentence_transformers(tmp_path, reference):
    """kbc_written/ is what save_sentence_transformers wrote; sentence-transformers' vectors
    of it (the fixture) equal ours, and writing it again gives the same files."""
    texts, vectors = reference
    source = os.path.join(DATA, "kbc_written")
    embedder, preprocessor = kbc.from_preset(source)
    np.testing.assert_allclose(embedder.predict(texts["texts"], verbose=0),
                               vectors["kbc_written"], atol=1e-5, rtol=0)
    np.testing.assert_allclose(embedder.predict(texts["texts"], prompt_name="query", verbose=0),
                               vectors["kbc_written_query"], atol=1e-5, rtol=0)
    again = kbc.save_sentence_transformers(embedder, preprocessor, tmp_path / "again")
    for root, _, files in os.walk(source):
        for name in files:
            relative = os.path.relpath(os.path.join(root, name), source)
            with open(os.path.join(source, relative), "rb") as f, \
                    open(os.path.join(again, relative), "rb") as g:
                assert f.read() == g.read(), relative


def test_round_trip_out_and_back_in_gives_the_same_vectors(tmp_path, reference):
    texts, _ = reference
    embedder, preprocessor = kbc.from_preset(assemble(tmp_path / "source", "dense_prompts"))
    folder = kbc.save_sentence_transformers(embedder, preprocessor, tmp_path / "out")
    loaded, _ = kbc.from_preset(folder)
    assert (loaded.prompts, loaded.dense_layers) == (embedder.prompts, embedder.dense_layers)
    np.testing.assert_allclose(loaded.predict(texts["texts"], verbose=0),
                               embedder.predict(texts["texts"], verbose=0), atol=1e-6)
    # The Transformer alone is the encoder load_checkpoint gives, on top or in a subfolder.
    encoder, config = load_checkpoint(folder)
    assert type(encoder).__name__ == "BertEncoder" and config.hidden_size == 32
    nested = shutil.copytree(folder, tmp_path / "nested")  # sentence-transformers 1's layout
    os.mkdir(nested / "0_Transformer")
    for name in ("config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json",
                 "sentence_bert_config.json"):
        shutil.move(nested / name, nested / "0_Transformer" / name)
    _edit_json(nested, "modules.json", lambda v: [{**v[0], "path": "0_Transformer"}, *v[1:]])
    assert detect_format(nested) == "sentence_transformers"
    encoder, _ = load_checkpoint(nested)
    assert type(encoder).__name__ == "BertEncoder"


def test_a_non_empty_folder_is_never_overwritten(tmp_path):
    embedder, preprocessor = kbc.from_preset(os.path.join(DATA, "kbc_written"))
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not empty; pass overwrite=True"):
        kbc.save_sentence_transformers(embedder, preprocessor, tmp_path)
    assert os.listdir(tmp_path) == ["keep.txt"]


@pytest.mark.parametrize("family", ["bert", "roberta", "albert", "distilbert"])
def test_hugging_face_writer_reads_back_for_every_family(tmp_path, family):
    overrides = {"roberta": {"position_offset": 2, "type_vocab_size": 1},
                 "albert": {"embedding_size": 16, "num_layer_groups": 1},
                 "distilbert": {"type_vocab_size": 0, "pooler": False,
                                "classifier_activation": "relu"}}.get(family, {})
    config = kbc.BertConfig.preset("tiny", vocab_size=100, max_position_embeddings=64,
                                   num_layers=2, hidden_size=32, num_heads=2,
                                   intermediate_size=64, family=family, **overrides)
    encoder = kbc.BertEncoder(config)
    kbc.save_huggingface_checkpoint(encoder, tmp_path)
    loaded, loaded_config = huggingface.load(tmp_path)
    assert loaded_config.family == family
    batch = encoder_batch(2, 12)
    if family in ("roberta", "distilbert"):
        batch["segment_ids"] = np.zeros_like(batch["segment_ids"])
    np.testing.assert_allclose(np.asarray(loaded(batch)["sequence_output"]),
                               np.asarray(encoder(batch)["sequence_output"]), atol=1e-6)


def _edit_json(folder, name, edit):
    path = os.path.join(folder, name)
    with open(path, encoding="utf-8") as f:
        values = json.load(f)
    values = edit(values)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(values, f)
    return path


def _set(**changes):
    return lambda values: {**values, **changes}


BAD_FOLDERS = {
    "module type": ("modules.json", lambda v: v[:2] + [{**v[2], "type":
                    "sentence_transformers.models.LSTM"}] + v[3:],
                    "module type 'sentence_transformers.models.LSTM' is not supported"),
    "module order": ("modules.json", lambda v: [{**v[0], "idx": 1}, {**v[1], "idx": 0}, *v[2:]],
                     "are not supported: keras_bert_core reads Transformer, Pooling"),
    "pooling mode": ("1_Pooling/config.json", _set(pooling_mode="weightedmean"),
                     "pooling mode 'weightedmean' is not supported"),
    "prompt excluded": ("1_Pooling/config.json", _set(include_prompt=False),
                        "include_prompt False is not supported"),
    "activation": ("2_Dense/config.json", _set(activation_function="torch.nn.SiLU"),
                   "activation_function 'torch.nn.SiLU' is not supported"),
    "similarity": ("config_sentence_transformers.json", _set(similarity_fn_name="jaccard"),
                   "similarity_fn_name 'jaccard' is not supported"),
}


@pytest.mark.parametrize("case", sorted(BAD_FOLDERS))
def test_bad_folders_give_one_clear_error(tmp_path, case):
    folder = assemble(tmp_path / "bad", "dense_prompts")
    name, edit, message = BAD_FOLDERS[case]
    path = _edit_json(folder, name, edit)
    with pytest.raises(CheckpointError) as error:
        kbc.from_preset(folder)
    text = str(error.value)
    assert "\n" not in text and text.startswith(path) and message in text, text


def test_dense_weights_are_never_unpickled(tmp_path):
    folder = assemble(tmp_path / "pickled", "dense_prompts")
    os.rename(os.path.join(folder, "2_Dense", "model.safetensors"),
              os.path.join(folder, "2_Dense", "pytorch_model.bin"))
    with pytest.raises(CheckpointError, match="2_Dense: no model.safetensors .* never "
                                              "unpickled"):
        kbc.from_preset(folder)


def test_a_folder_saved_with_tokenizer_json_alone_gives_the_same_vectors(tmp_path, minilm_dir,
                                                                           reference):
    """sentence-transformers with transformers 5 saves tokenizer.json without vocab.txt."""
    texts, vectors = reference
    folder = tmp_path / "minilm"
    folder.mkdir()
    for entry in minilm_dir.iterdir():
        if entry.name != "vocab.txt":
            (folder / entry.name).symlink_to(entry)
    embedder, preprocessor = kbc.from_preset(folder)
    assert (preprocessor.seq_length, preprocessor.lower_case) == (256, True)
    assert preprocessor.vocabulary == (minilm_dir / "vocab.txt").read_text().splitlines()
    np.testing.assert_allclose(embedder.predict(texts["minilm_texts"], verbose=0),
                               vectors["minilm"], atol=1e-5, rtol=0)
