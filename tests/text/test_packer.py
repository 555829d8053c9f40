"""BertPacker: layout (BERT's and RoBERTa's), truncation semantics (tf.text round robin, HF
longest first), shapes."""

import itertools

import keras
import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert_core.text import BertPacker

CLS, SEP, PAD = 101, 102, 0


def make_packer(seq_length=8, **kwargs):
    return BertPacker(seq_length, cls_id=CLS, sep_id=SEP, pad_id=PAD, **kwargs)


def ragged(rows):
    return tf.ragged.constant(rows, dtype=tf.int32, ragged_rank=1)


def as_lists(outputs):
    return {name: x.numpy().tolist() for name, x in outputs.items()}


def segment_rows(lengths, first_id):
    return ragged([list(range(first_id, first_id + n)) for n in lengths])


def kept_lengths(token_ids, first_id):
    """How many ids of the segment that starts at first_id each packed row kept."""
    token_ids = tf.convert_to_tensor(token_ids)
    in_segment = (token_ids >= first_id) & (token_ids < first_id + 100)
    return tf.reduce_sum(tf.cast(in_segment, tf.int32), axis=1).numpy().tolist()


def test_pair_layout_segment_ids_and_padding_mask():
    out = as_lists(make_packer(10)((ragged([[1, 2, 3], [4]]), ragged([[5, 6], []]))))
    assert out == {
        "token_ids": [[CLS, 1, 2, 3, SEP, 5, 6, SEP, PAD, PAD],
                      [CLS, 4, SEP, SEP, PAD, PAD, PAD, PAD, PAD, PAD]],
        "segment_ids": [[0, 0, 0, 0, 0, 1, 1, 1, 0, 0],
                        [0, 0, 0, 1, 0, 0, 0, 0, 0, 0]],
        "padding_mask": [[1, 1, 1, 1, 1, 1, 1, 1, 0, 0],
                         [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]],
    }


def test_single_segment_is_trimmed_at_its_end():
    out = as_lists(make_packer(5)(ragged([[1, 2, 3, 4, 5, 6], [], [7]])))
    assert out["token_ids"] == [[CLS, 1, 2, 3, SEP], [CLS, SEP, PAD, PAD, PAD],
                                [CLS, 7, SEP, PAD, PAD]]
    assert out["segment_ids"] == [[0] * 5] * 3
    assert out["padding_mask"] == [[1] * 5, [1, 1, 0, 0, 0], [1, 1, 1, 0, 0]]


@pytest.mark.parametrize("seq_length", [3, 6, 9, 12])
def test_round_robin_matches_tf_text_round_robin_trimmer(seq_length):
    lengths = list(itertools.product(range(0, 10), repeat=2))
    a = segment_rows([n for n, _ in lengths], 1000)
    b = segment_rows([n for _, n in lengths], 2000)
    out = make_packer(seq_length, truncation="round_robin")((a, b))
    trimmed_a, trimmed_b = tf_text.RoundRobinTrimmer(seq_length - 3).trim([a, b])
    assert kept_lengths(out["token_ids"], 1000) == trimmed_a.row_lengths().numpy().tolist()
    assert kept_lengths(out["token_ids"], 2000) == trimmed_b.row_lengths().numpy().tolist()


@pytest.mark.parametrize("seq_length", [3, 6, 9, 12])
def test_longest_first_matches_hugging_face_truncation(tmp_path, seq_length):
    tokenizers = pytest.importorskip("tokenizers", reason="reference truncation")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"]))
    reference = tokenizers.BertWordPieceTokenizer(str(vocab))
    reference.enable_truncation(seq_length, strategy="longest_first")
    lengths = list(itertools.product(range(0, 10), repeat=2))
    encodings = reference.encode_batch(
        [("a " * n, "b " * m) for n, m in lengths], add_special_tokens=True
    )
    out = make_packer(seq_length, truncation="longest_first")(
        (segment_rows([n for n, _ in lengths], 1000), segment_rows([m for _, m in lengths], 2000))
    )
    assert kept_lengths(out["token_ids"], 1000) == [e.ids.count(5) for e in encodings]
    assert kept_lengths(out["token_ids"], 2000) == [e.ids.count(6) for e in encodings]


def test_truncation_modes_differ_only_in_who_keeps_the_odd_token():
    a, b = segment_rows([9, 4], 1000), segment_rows([9, 9], 2000)
    round_robin = make_packer(8, truncation="round_robin")((a, b))["token_ids"]
    longest_first = make_packer(8, truncation="longest_first")((a, b))["token_ids"]
    assert kept_lengths(round_robin, 1000) == [3, 3]
    assert kept_lengths(round_robin, 2000) == [2, 2]
    assert kept_lengths(longest_first, 1000) == [2, 2]
    assert kept_lengths(longest_first, 2000) == [3, 3]


def test_dynamic_shape_pads_to_a_multiple_of_8_capped_at_seq_length():
    packer = make_packer(20, static_shape=False)
    for longest, width in [(1, 8), (6, 8), (7, 16), (14, 16), (15, 20), (40, 20)]:
        out = packer(ragged([[1] * longest, [2]]))
        assert out["token_ids"].shape == (2, width), longest
    assert packer(ragged([[1]]), static_shape=True)["token_ids"].shape == (1, 20)
    assert make_packer(20)(ragged([[1]]), static_shape=False)["token_ids"].shape == (1, 8)


def test_static_shape_is_known_when_traced():
    packer = make_packer(16)

    @tf.function(input_signature=[tf.RaggedTensorSpec([None, None], tf.int32, 1)] * 2)
    def pack(a, b):
        return packer((a, b))

    outputs = pack.get_concrete_function().structured_outputs
    assert {name: x.shape.as_list() for name, x in outputs.items()} == {
        "token_ids": [None, 16], "segment_ids": [None, 16], "padding_mask": [None, 16]
    }


def test_empty_batch_and_unbatched_example():
    empty = ragged([[1]])[:0]
    assert {k: v.shape for k, v in make_packer(8)(empty).items()} == {
        "token_ids": (0, 8), "segment_ids": (0, 8), "padding_mask": (0, 8)
    }
    assert make_packer(8, static_shape=False)((empty, empty))["token_ids"].shape == (0, 0)
    single = as_lists(make_packer(6)((tf.constant([1, 2]), tf.constant([3, 4, 5]))))
    assert single == {
        "token_ids": [CLS, 1, 2, SEP, 3, SEP],
        "segment_ids": [0, 0, 0, 0, 1, 1],
        "padding_mask": [1, 1, 1, 1, 1, 1],
    }


def test_outputs_are_int32_whatever_the_input_int_type():
    out = make_packer(8)(tf.ragged.constant([[1, 2]], dtype=tf.int64))
    assert {x.dtype for x in out.values()} == {tf.int32}


def test_invalid_arguments():
    with pytest.raises(ValueError, match="truncation"):
        make_packer(8, truncation="shortest")
    with pytest.raises(ValueError, match="seq_length"):
        make_packer(1)
    with pytest.raises(ValueError, match="special tokens"):
        make_packer(2)((ragged([[1]]), ragged([[2]])))
    with pytest.raises(ValueError, match="one or two segments"):
        make_packer(8)((ragged([[1]]),) * 3)


def test_config_round_trip():
    packer = make_packer(12, truncation="longest_first", static_shape=False)
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(packer))
    assert isinstance(restored, BertPacker)
    assert restored.get_config() == packer.get_config()
    a, b = ragged([[1, 2, 3]]), ragged([[4] * 20])
    assert as_lists(restored((a, b))) == as_lists(packer((a, b)))


def roberta_packer(seq_length=8, **kwargs):
    return BertPacker(seq_length, cls_id=0, sep_id=2, pad_id=1, pair_separators=2,
                      second_segment_id=0, **kwargs)


def test_roberta_layout_two_separators_and_one_token_type():
    out = as_lists(roberta_packer(10)((ragged([[10, 11], [12]]), ragged([[20], []]))))
    assert out == {
        "token_ids": [[0, 10, 11, 2, 2, 20, 2, 1, 1, 1], [0, 12, 2, 2, 2, 1, 1, 1, 1, 1]],
        "segment_ids": [[0] * 10] * 2,
        "padding_mask": [[1] * 7 + [0] * 3, [1] * 5 + [0] * 5],
    }
    # A single segment is packed as BERT packs it.
    single = as_lists(roberta_packer(6)(ragged([[10, 11, 12, 13, 14, 15]])))
    assert single["token_ids"] == [[0, 10, 11, 12, 13, 2]]


@pytest.mark.parametrize("truncation", ["round_robin", "longest_first"])
def test_the_extra_separator_takes_its_room_from_the_segments(truncation):
    # A RoBERTa pair has 4 special tokens: it keeps what BERT's layout keeps one shorter.
    lengths = list(itertools.product(range(0, 9), repeat=2))
    a = segment_rows([n for n, _ in lengths], 1000)
    b = segment_rows([m for _, m in lengths], 2000)
    for seq_length in (4, 7, 10):
        roberta = roberta_packer(seq_length, truncation=truncation)((a, b))
        bert = make_packer(seq_length - 1, truncation=truncation)((a, b))
        for first_id in (1000, 2000):
            assert (kept_lengths(roberta["token_ids"], first_id)
                    == kept_lengths(bert["token_ids"], first_id)), (seq_length, first_id)
        real = tf.reduce_sum(roberta["padding_mask"], axis=1).numpy().tolist()
        assert real == [min(seq_length, n + m + 4) for n, m in lengths]
    with pytest.raises(ValueError, match="cannot hold 4 special tokens"):
        roberta_packer(3)((a, b))


def test_pair_options_second_segment_id_and_validation():
    # BERT's separators with one token type (and the reverse) are options too.
    out = make_packer(8, second_segment_id=0)((ragged([[5]]), ragged([[6]])))
    assert as_lists(out)["segment_ids"] == [[0] * 8]
    out = make_packer(8, pair_separators=2)((ragged([[5]]), ragged([[6]])))
    assert as_lists(out)["token_ids"] == [[CLS, 5, SEP, SEP, 6, SEP, PAD, PAD]]
    assert as_lists(out)["segment_ids"] == [[0, 0, 0, 0, 1, 1, 0, 0]]
    with pytest.raises(ValueError, match="pair_separators"):
        make_packer(8, pair_separators=3)
    with pytest.raises(ValueError, match="second_segment_id"):
        make_packer(8, second_segment_id=2)
    packer = roberta_packer(12, truncation="longest_first")
    restored = BertPacker.from_config(packer.get_config())
    assert (restored.pair_separators, restored.second_segment_id) == (2, 0)
