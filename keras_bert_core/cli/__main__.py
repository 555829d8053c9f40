import sys

from keras_bert_core.cli import main

sys.exit(main())
