"""Execute the documentation's notebooks (nbclient), optionally with other parameters.

A notebook's parameters live in the code cell tagged ``parameters`` (as papermill does): ``execute``
inserts a cell right after it that overrides them, so the test suite can run the getting-started
notebook on the fake model or at tiny N without editing it. The site shows each notebook's stored
outputs and never executes it; refresh them with

    python docs/tools/notebooks.py docs/getting-started/first-experiment.ipynb

which runs the notebook in a scratch folder (its run folders stay out of the repository) with its
own parameters and writes the outputs back into the file.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def parameters_cell(nb) -> int:
    """Index of the code cell tagged ``parameters``; a notebook without one cannot be parameterised."""
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            return i
    raise ValueError("the notebook has no code cell tagged `parameters` (e.g. `model = \"embedded\"`); tag the "
                     "cell that sets its parameters so that tests can override them")


def execute(path: str | Path, cwd: str | Path, parameters: dict | None = None, timeout: int = 900):
    """Run the notebook at ``path`` in ``cwd`` and return it with its outputs. ``parameters``
    (name → value) are set in a cell inserted after the ``parameters`` cell; this checkout of louder
    is imported first."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    setup = f"import sys; sys.path.insert(0, {str(ROOT)!r})"
    nb.cells.insert(0, nbformat.v4.new_code_cell(setup, metadata={"tags": ["injected"]}))
    if parameters:
        at = parameters_cell(nb)
        lines = "\n".join(f"{k} = {v!r}" for k, v in parameters.items())
        nb.cells.insert(at + 1, nbformat.v4.new_code_cell(lines, metadata={"tags": ["injected-parameters"]}))
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def refresh(path: str | Path) -> None:
    """Execute ``path`` with its own parameters in a scratch folder and store the outputs in it."""
    import nbformat

    with tempfile.TemporaryDirectory() as tmp:
        nb = execute(path, tmp)
    nb.cells = [c for c in nb.cells if "injected" not in c.get("metadata", {}).get("tags", [])]
    count = 0
    for cell in nb.cells:  # number the kept cells 1, 2, … as a fresh run would
        if cell.cell_type == "code":
            count += 1
            cell.execution_count = count
            for out in cell.outputs:
                if "execution_count" in out:
                    out["execution_count"] = count
    nbformat.write(nb, str(path))


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        refresh(arg)
        print(f"refreshed {arg}")
