# The Python of the reference scripts (fixtures, benchmark peers): sourced, after setting `top`.
#   python_with "import torch, transformers" torch transformers ...
# sets $py to $PYTHON, else the virtual environment $VENV (default bench/.venv of this tree),
# creating it and installing the packages from PyPI when the import fails. Python is never needed
# by make check: these scripts write committed fixtures or print benchmark figures.
python_with() {
    imports=$1; shift
    venv=${VENV:-"$top/bench/.venv"}
    py=${PYTHON:-"$venv/bin/python"}
    "$py" -c "$imports" 2>/dev/null && return 0
    [ -n "${PYTHON:-}" ] && { echo "$PYTHON cannot '$imports'" >&2; return 1; }
    [ -x "$py" ] || { echo "creating the virtual environment $venv"; python3 -m venv "$venv" || return 1; }
    echo "installing $* into $venv (from PyPI)"
    "$py" -m pip install -q --upgrade pip && "$py" -m pip install -q "$@" && "$py" -c "$imports"
}
