"""Run by Python at the start of every process the tests start: tests/conftest.py puts this
folder on their PYTHONPATH.

The test extra brings scikit-learn in (tf-models-official needs seqeval, which needs it), and
Keras imports it at start-up when it is installed (for its scikit-learn wrappers), about a
second of each `kbc` and worker process the suite starts. A user's install of the package
has no scikit-learn, so these processes do without it too; the tests' own processes keep it
(seqeval's reference scores).
"""

import sys

sys.modules.setdefault("sklearn", None)  # `import sklearn` fails, as when not installed
