"""Semantic search over a folder of text files with an embedding model (`kbc.BertEmbedder`).

Every paragraph of every .txt file is embedded once; a query is embedded the same way and
the paragraphs most cosine-similar to it are printed with their files. Point `--model` at
an embedding model (a sentence-transformers folder such as all-MiniLM-L6-v2, a
`kbc finetune --task embed` run, a preset); without one, a tiny model is trained here on
the folder itself (each paragraph's first sentence must find the rest of its paragraph:
contrastive training with in-batch negatives), so the script runs anywhere; it knows only
the folder's own words, so its matches show the mechanics, not a pretrained model's sense.

    python examples/semantic_search.py --folder notes/ --model all-MiniLM-L6-v2/ \\
        --query "how do I reset my password"
    python examples/semantic_search.py --smoke   # seconds, for tests: a toy folder
"""

import argparse
import os
import re
import tempfile

import keras_bert_core as kbc
from keras_bert_core.tasks.embedding import top_documents, unique_text_batches
from keras_bert_core.text.vocabulary.learning import learn_wordpiece_vocab

TOY_FILES = {
    "cats.txt": "Cats sleep for most of the day. A cat purrs when it is content and hunts "
                "mice at night.\n\nKittens play with yarn. Young cats learn to hunt by "
                "playing.",
    "weather.txt": "Rain falls from grey clouds. A storm brings thunder, wind and heavy "
                   "rain.\n\nThe sun shines in summer. Warm days follow the spring rain.",
    "music.txt": "The orchestra played a symphony. Violins and cellos carried the "
                 "melody.\n\nShe sings in a choir. The singers practise every week.",
    "space.txt": "The moon orbits the earth. Astronauts walked on the moon in 1969."
                 "\n\nStars burn hydrogen. A star much heavier than the sun ends as a "
                 "black hole.",
    "cooking.txt": "Bread needs flour, water, yeast and salt. The dough rises before it is "
                   "baked.\n\nSoup simmers for an hour. Onions and carrots give it flavour.",
}
TOY_QUERIES = ["a kitten hunting", "thunder and rain", "baking bread with yeast"]


def paragraphs(folder):
    """`(file name, paragraph)` of every non-empty paragraph of the folder's .txt files."""
    found = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".txt"):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                found += [(name, p.strip()) for p in f.read().split("\n\n") if p.strip()]
    if not found:
        raise SystemExit(f"{folder} holds no .txt file with text")
    return found


def train_tiny_model(folder, texts, steps):
    """A tiny embedder trained on the folder: first sentence -> the rest of its paragraph."""
    vocab = learn_wordpiece_vocab(os.path.join(folder, "*.txt"), vocab_size=300,
                                  learn_params={"lower_thresh": 1})
    encoder = kbc.BertEncoder(kbc.BertConfig.preset("tiny", vocab_size=len(vocab),
                                                    max_position_embeddings=64))
    model = kbc.BertEmbedder(encoder, preprocessor=kbc.BertPreprocessor(vocab, seq_length=48))
    split = [re.split(r"(?<=\.) ", text, maxsplit=1) for text in texts]
    anchors, positives = [s[0] for s in split if len(s) == 2], [s[1] for s in split if len(s) == 2]
    batch_size = 4
    # Batches without a text twice (a repeated text would be a false negative), repeated
    # for `steps` batches in one epoch.
    order = [i for batch in unique_text_batches((anchors, positives), batch_size, seed=0)
             for i in batch] * steps
    order = order[:steps * batch_size]
    model.compile(optimizer=kbc.create_optimizer(2e-3, steps, steps // 10))
    model.fit(([anchors[i] for i in order], [positives[i] for i in order]),
              batch_size=batch_size, shuffle=False, verbose=0)
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", help="the .txt files to search (default: a toy folder)")
    parser.add_argument("--model", help="an embedding model (default: train a tiny one)")
    parser.add_argument("--query", action="append", help="what to search for (repeatable)")
    parser.add_argument("--top", type=int, default=2, help="paragraphs shown per query")
    parser.add_argument("--smoke", action="store_true", help="a few training steps")
    args = parser.parse_args()
    folder = args.folder
    if folder is None:
        folder = tempfile.mkdtemp()
        for name, text in TOY_FILES.items():
            with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
                f.write(text + "\n")
    found = paragraphs(folder)
    texts = [text for _, text in found]
    if args.model:
        model, _ = kbc.from_preset(args.model)
    else:
        model = train_tiny_model(folder, texts, steps=4 if args.smoke else 200)
    # The index: one unit vector per paragraph (keep it, e.g. with numpy.save, to reuse).
    index = model.predict(texts, verbose=0)
    print(f"indexed {len(texts)} paragraphs of {folder}: vectors {index.shape}")
    queries = args.query or TOY_QUERIES
    for query, rows in zip(queries, top_documents(model.predict(queries, verbose=0), index,
                                                  args.top), strict=True):
        print(f"\n{query!r}")
        for rank, row in enumerate(rows, start=1):
            print(f"  top match {rank}: {found[row][0]}: {found[row][1][:70]}")


if __name__ == "__main__":
    main()
