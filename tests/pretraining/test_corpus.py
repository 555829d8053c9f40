from keras_bert_core.pretraining.corpus import read_documents


def test_documents_stream_across_blocks(tmp_path):
    path = tmp_path / "docs.txt"
    path.write_text("\n\na1\na2\n\n\n  \nb1\nb2\nb3\nb4\n\nc1\n \nd1\nd2")
    docs = [list(d) for d in read_documents(str(path), block_lines=3).as_numpy_iterator()]
    assert docs == [[b"a1", b"a2"], [b"b1", b"b2", b"b3", b"b4"], [b"c1"], [b"d1", b"d2"]]
