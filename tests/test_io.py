import os
import stat

import pandas as pd

from louder.io import write_json, write_parquet


def test_output_files_respect_umask(tmp_path):
    old = os.umask(0o022)
    try:
        write_json({"a": 1}, tmp_path / "m.json")
        write_parquet(pd.DataFrame({"x": [1]}), tmp_path / "d.parquet")
        os.umask(0o077)
        write_json({"a": 1}, tmp_path / "private.json")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "m.json").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "d.parquet").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "private.json").stat().st_mode) == 0o600
