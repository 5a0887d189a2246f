"""A small recorded network run (what a network experiment writes), for the view's tests."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd


def write_network_run(out: Path, n: int = 60, rounds: int = 3, seed: int = 0) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    g = nx.watts_strogatz_graph(n, 4, 0.1, seed=seed)
    attrs = np.array(["man", "woman", "non-binary"])[np.arange(n) % 3]
    key = dict(model="fake", condition="contextualized", scenario="emergency_response", group="gender_identity")
    rows, control = [], []
    p = np.where(attrs == "woman", 0.8, 0.5)
    for r in range(rounds + 1):
        target = rng.random(n) < p
        status = np.where(rng.random(n) < 0.05, "invalid", "valid")
        for i in range(n):
            ok = status[i] == "valid"
            rows.append(dict(key, attribute=attrs[i], agent_id=i + 1, node=i, round=r, status=status[i],
                             decision=("Evacuate" if target[i] else "Stay") if ok else None,
                             target=bool(target[i]) if ok else None))
            control.append(dict(key, node=i, round=r, target=bool(rng.random() < 0.6)))
    pd.DataFrame(rows).astype({"target": "boolean"}).to_parquet(out / "decisions.parquet")
    pd.DataFrame([dict(key, source=s, target=t) for s, t in g.edges]).to_parquet(out / "network.parquet")
    pd.DataFrame(control).to_parquet(out / "control.parquet")
    return out
