"""Run by Python at the start of every process the tests start: tests/conftest.py puts this
folder on their PYTHONPATH. These processes run as a user's would.

The test extra brings in packages that a user's install of the package (its extras
included) does not have, and Keras or TensorFlow import them at start-up when they are
installed, about a second of each `kbc` and worker process the suite starts:
scikit-learn (tf-models-official needs seqeval, which needs it; Keras imports it for its
scikit-learn wrappers), pandas (Keras's array slicing) and the Google API client
(TensorFlow's GCE cluster resolver; tf-models-official needs it). These processes do
without them, as a user's do; the tests' own processes keep them (seqeval's reference
scores).
"""

import sys

for _name in ("sklearn", "pandas", "googleapiclient"):
    sys.modules.setdefault(_name, None)  # `import NAME` fails, as when not installed
