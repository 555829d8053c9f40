"""A vocabulary read from Hugging Face's tokenizer.json alone (folders saved with transformers
5): the same ids as the vocabulary files and as `tokenizers`, and a one-line refusal of every
setting the package's tokenizers do not reproduce."""

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from keras_bert_core.text import BertPreprocessor
from keras_bert_core.text.vocabulary.files import find_vocabulary
from keras_bert_core.text.vocabulary.tokenizer_json import read_tokenizer_json
from tests.text.fuzz_texts import tokenizer_corpus

ROBERTA = Path(__file__).parents[2] / "checkpoints" / "data" / "families" / "roberta"


@pytest.fixture(scope="module")
def texts():
    """Every 15th line of the tokenizer corpus: standard-library docstring lines, then
    lines of accents, CJK, emoji, control and zero-width characters, long words."""
    lines = tokenizer_corpus()[::15]
    assert len(lines) > 300 and any(not line.isascii() for line in lines)
    return lines


def only_tokenizer_json(source, folder):
    folder.mkdir()
    for name in ("tokenizer.json", "config.json"):
        shutil.copy(source / name, folder)
    return folder


def packed_ids(preprocessor, texts):
    out = preprocessor(texts, static_shape=False)
    return [ids[mask == 1].tolist() for ids, mask in zip(
        out["token_ids"].numpy(), out["padding_mask"].numpy(), strict=True)]


def assert_same_ids(json_only, with_files, texts, seq_length):
    """The ids of the folder with tokenizer.json alone are those of the folder with the
    vocabulary files and those of `tokenizers` reading the same tokenizer.json."""
    tokenizers = pytest.importorskip("tokenizers", reason="reference tokenizer for parity")
    ours = packed_ids(BertPreprocessor(json_only, seq_length=seq_length), texts)
    assert ours == packed_ids(BertPreprocessor(with_files, seq_length=seq_length), texts)
    reference = tokenizers.Tokenizer.from_file(str(json_only / "tokenizer.json"))
    reference.no_truncation()
    reference.no_padding()
    expected = [e.ids for e in reference.encode_batch(texts)]
    assert max(map(len, expected)) < seq_length  # nothing cut
    differing = [text for text, a, b in zip(texts, ours, expected, strict=True) if a != b]
    assert not differing, f"{len(differing)} texts differ from tokenizers, e.g. {differing[:3]}"


def test_minilm_tokenizer_json_alone_gives_the_ids_of_its_vocab_txt(minilm_dir, tmp_path,
                                                                     texts):
    folder = only_tokenizer_json(minilm_dir, tmp_path / "minilm")
    source = find_vocabulary(folder)
    assert (source.kind, source.file, source.options) == (
        "wordpiece", str(folder / "tokenizer.json"), {"lower_case": True})
    assert source.vocabulary == (minilm_dir / "vocab.txt").read_text().splitlines()
    assert_same_ids(folder, minilm_dir, texts, seq_length=512)


def test_roberta_tokenizer_json_alone_gives_the_ids_of_vocab_json_and_merges(tmp_path, texts):
    folder = only_tokenizer_json(ROBERTA, tmp_path / "roberta")
    spec = json.loads((folder / "tokenizer.json").read_text())
    assert all(isinstance(m, list) for m in spec["model"]["merges"])  # as tokenizers 0.20+
    source = find_vocabulary(folder)
    assert source.kind == "byte_pair"
    assert source.vocabulary == json.loads((ROBERTA / "vocab.json").read_text())
    merges = (ROBERTA / "merges.txt").read_text().splitlines()[1:]
    assert source.merges == merges
    # Older files write each merge as one "a b" string.
    spec["model"]["merges"] = [" ".join(m) for m in spec["model"]["merges"]]
    (tmp_path / "tokenizer.json").write_text(json.dumps(spec))
    assert read_tokenizer_json(str(tmp_path / "tokenizer.json")).merges == merges
    assert_same_ids(folder, ROBERTA, texts, seq_length=2048)


def _wordpiece_spec():
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "fox", "##es"]
    return {"added_tokens": [{"id": 0, "content": "[PAD]", "special": True}],
            "normalizer": {"type": "BertNormalizer", "clean_text": True,
                           "handle_chinese_chars": True, "strip_accents": None,
                           "lowercase": False},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "model": {"type": "WordPiece", "unk_token": "[UNK]",
                      "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
                      "vocab": {t: i for i, t in enumerate(tokens)}}}


def _roberta_spec():
    return json.loads((ROBERTA / "tokenizer.json").read_text())


def _albert_spec():
    return json.loads((ROBERTA.parent / "albert" / "tokenizer.json").read_text())


def _xlm_roberta_spec():
    return json.loads((ROBERTA.parents[1] / "xlm_roberta" / "mlm" / "tokenizer.json")
                      .read_text())


def _set(spec, path, value):
    *parents, last = path.split(".")
    for key in parents:
        spec = spec[key]
    spec[last] = value


REFUSED = {
    "Unigram": (_wordpiece_spec, "model.type", "Unigram",
                "model.vocab of a Unigram model is not a list"),
    "ALBERT's Unigram": (_albert_spec, "model.unk_id", 1,
                         "a Unigram model that is not laid out as XLM-RoBERTa's"),
    "XLM-R normalizer": (_xlm_roberta_spec, "normalizer", {"type": "NFKC"},
                         "normalizer step .*NFKC"),
    "XLM-R pre-tokenizer": (_xlm_roberta_spec, "pre_tokenizer", {"type": "Whitespace"},
                            "pre_tokenizer .* with an XLM-RoBERTa Unigram model"),
    "WordLevel": (_wordpiece_spec, "model.type", "WordLevel", "model.type 'WordLevel'"),
    "prefix": (_wordpiece_spec, "model.continuing_subword_prefix", "@@",
               'model.continuing_subword_prefix is "@@"'),
    "unk": (_wordpiece_spec, "model.unk_token", "<unk>", 'model.unk_token is "<unk>"'),
    "Sequence normalizer": (_wordpiece_spec, "normalizer", {"type": "Sequence", "normalizers": [
        {"type": "NFD"}, {"type": "Lowercase"}]}, 'normalizer "Sequence" with a WordPiece'),
    "accents kept": (_wordpiece_spec, "normalizer", {
        "type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
        "strip_accents": False, "lowercase": True},
        "normalizer.lowercase true with strip_accents false"),
    "no CJK split": (_wordpiece_spec, "normalizer.handle_chinese_chars", False,
                     "normalizer.handle_chinese_chars is false"),
    "Whitespace": (_wordpiece_spec, "pre_tokenizer", {"type": "Whitespace"},
                   'pre_tokenizer "Whitespace" with a WordPiece'),
    "added token": (_wordpiece_spec, "added_tokens", [{"id": 7, "content": "foxy",
                                                       "special": False}],
                    "added token 'foxy' \\(id 7\\) is not in model.vocab"),
    "prefix space": (_roberta_spec, "pre_tokenizer.add_prefix_space", True,
                     "pre_tokenizer.add_prefix_space is true"),
    "BPE normalizer": (_roberta_spec, "normalizer", {"type": "NFKC"},
                       'normalizer "NFKC" with byte-level BPE'),
    "not byte-level": (_roberta_spec, "pre_tokenizer", {"type": "Metaspace"},
                       'a BPE model with pre_tokenizer "Metaspace"'),
    "dropout": (_roberta_spec, "model.dropout", 0.1, "model.dropout is 0.1"),
    "keras-hub": (dict, "config", {"lowercase": True}, "holds no Hugging Face tokenizer model"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_settings_the_package_does_not_reproduce_are_refused_in_one_line(tmp_path, case):
    make, path, value, message = REFUSED[case]
    spec = make()
    _set(spec, path, value)
    if case == "added token":  # in the vocabulary, but found in text by the reference
        spec["model"]["vocab"]["foxy"] = 7
        message = "added token 'foxy' is not special"
    (tmp_path / "tokenizer.json").write_text(json.dumps(spec))
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / 'tokenizer.json'}: ")
                       + message) as error:
        BertPreprocessor(tmp_path)
    assert "\n" not in str(error.value)


def test_a_tokenizer_json_path_is_read_as_the_folder_is(tmp_path):
    (tmp_path / "tokenizer.json").write_text(json.dumps(_wordpiece_spec()))
    preprocessor = BertPreprocessor(str(tmp_path / "tokenizer.json"), seq_length=8)
    assert not preprocessor.lower_case  # the normalizer's casing
    np.testing.assert_array_equal(preprocessor(["foxes Fox"])["token_ids"][0],
                                  [2, 5, 6, 1, 3, 0, 0, 0])
    # tokenizer_config.json's do_lower_case wins, as beside vocab.txt; transformers rebuilds
    # the normalizer from its strip_accents and tokenize_chinese_chars too.
    config = tmp_path / "tokenizer_config.json"
    config.write_text('{"do_lower_case": true, "strip_accents": null}')
    assert BertPreprocessor(tmp_path).lower_case
    for settings, message in (('"strip_accents": false', "strip_accents false with lower-casing"),
                              ('"tokenize_chinese_chars": false',
                               "tokenize_chinese_chars is false")):
        config.write_text(f'{{"do_lower_case": true, {settings}}}')
        with pytest.raises(ValueError, match=re.escape(f"{config}: {message}")):
            BertPreprocessor(tmp_path)
