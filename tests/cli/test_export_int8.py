"""`kbc export --tflite-variants int8 --calibration FILE`, as a user runs it: a new process,
the int8 file and the label agreement it reports; and its errors in the user's words (in this
process: they come before any conversion)."""

import csv
import re

import pytest

from keras_bert_core.export.op_allowlists import tflite_op_types, unsupported_tflite_ops
from tests.cli.conftest import DATA
from tests.cli.test_deployment_errors import kbc_process
from tests.cli.test_errors import assert_user_error


def _reviews():
    with open(DATA / "sentiment.csv", encoding="utf-8") as f:
        return [row["review"] for row in csv.DictReader(f)]


def test_int8_export_reports_label_agreement(classify_run, tmp_path):
    calibration = tmp_path / "calibration.txt"
    texts = _reviews()
    calibration.write_text("".join(text + "\n" for text in texts), encoding="utf-8")
    output = tmp_path / "export"
    result = kbc_process("export", classify_run, "-o", output, "--format", "tflite",
                         "--tflite-variants", "int8", "--calibration", calibration)
    assert result.code == 0, result.err[-3000:]
    assert "fully_quantize" not in result.err  # the quantizer's native print, hidden
    # Only the int8 file: the float32 reference it was checked against is not kept.
    assert sorted(p.name for p in output.iterdir()) == ["model_int8.tflite"]
    content = (output / "model_int8.tflite").read_bytes()
    assert unsupported_tflite_ops(tflite_op_types(content)) == set()
    reported = re.search(r"int8 labels agree with float32 on (\d+) of (\d+) calibration "
                         r"texts \((\d+\.\d)%\)", result.err)
    assert reported, result.err[-3000:]
    agreeing, total = int(reported.group(1)), int(reported.group(2))
    assert total == len(texts)
    assert agreeing >= 0.9 * total, result.err[-3000:]


def _export_int8(kbc, run, tmp_path, *extra):
    return kbc("export", run, "-o", tmp_path / "export", "--format", "tflite",
               "--tflite-variants", "int8", *extra)


def test_int8_without_calibration(kbc, classify_run, tmp_path):
    assert_user_error(_export_int8(kbc, classify_run, tmp_path),
                      "--tflite-variants int8 needs --calibration FILE")


@pytest.mark.parametrize("content, fragments", [
    (None, ["no such file"]),
    (b"\n  \n", ["is empty: no texts to calibrate the int8 model on"]),
    (b"good film\nbad \xff film\n", ["is not UTF-8 text (line 2: byte 0xff)"]),
])
def test_bad_calibration_file(kbc, classify_run, tmp_path, content, fragments):
    path = tmp_path / "calibration.txt"
    if content is not None:
        path.write_bytes(content)
    result = _export_int8(kbc, classify_run, tmp_path, "--calibration", path)
    assert_user_error(result, str(path), *fragments)
    assert not (tmp_path / "export").exists()
