#!/usr/bin/env bash
# Fetch the scikit-learn "digits" data set (1,797 8x8 images of handwritten
# digits, pixel values 0..16, labels 0..9) into crates/rlx/examples/data/digits/.
#
# The data is taken, byte for byte, from the scikit-learn wheel on PyPI
# (sklearn/datasets/data/digits.csv.gz: 1,797 rows of 64 pixels then the
# label). LICENSE.txt is assembled from the wheel's licence (the BSD-3
# section of COPYING) and the data's origin note in
# sklearn/datasets/descr/digits.rst (a copy of the test set of the UCI ML
# "Optical Recognition of Handwritten Digits" data set).
#
# Usage (from anywhere; needs python3 with pip, and network access to PyPI):
#
#     tools/fetch_digits.sh
#
# The scikit-learn version and the digest of digits.csv.gz are pinned, so a
# re-run reproduces the committed files exactly. SKLEARN_VERSION=x.y.z
# overrides the version (the digest check then only warns).
set -euo pipefail

SKLEARN_VERSION="${SKLEARN_VERSION:-1.9.1}"
PINNED_VERSION="1.9.1"
DIGITS_SHA256="09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DEST="$HERE/../crates/rlx/examples/data/digits"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

python3 -m pip download --quiet --no-deps --only-binary=:all: \
    "scikit-learn==$SKLEARN_VERSION" -d "$WORK"
WHEEL="$(ls "$WORK"/scikit_learn-*.whl | head -n 1)"

mkdir -p "$DEST"
python3 - "$WHEEL" "$DEST" "$SKLEARN_VERSION" <<'PY'
import re, sys, zipfile

wheel, dest, version = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z:
    names = z.namelist()

    def member(pattern):
        hits = [n for n in names if re.fullmatch(pattern, n)]
        if len(hits) != 1:
            sys.exit(f"{wheel}: expected one member matching {pattern}, found {hits}")
        return z.read(hits[0])

    data = member(r"sklearn/datasets/data/digits\.csv\.gz")
    copying = member(r"scikit_learn-[^/]+\.dist-info/(licenses/)?COPYING").decode()
    descr = member(r"sklearn/datasets/descr/digits\.rst").decode()

with open(f"{dest}/digits.csv.gz", "wb") as f:
    f.write(data)

# COPYING of a binary wheel appends the licences of bundled runtime libraries
# (libgomp) after a "----" line; the data set is covered by the BSD-3 part.
bsd = copying.split("\n----\n")[0].strip()
if "BSD 3-Clause License" not in bsd:
    sys.exit("COPYING does not start with the BSD 3-Clause licence")

# The origin note: digits.rst from its title up to the references dropdown.
note = descr.split(".. dropdown::")[0].strip()
note = re.sub(r"^\.\. _digits_dataset:\s*", "", note)
refs = ""
if ".. dropdown:: References" in descr:
    refs = descr.split(".. dropdown:: References", 1)[1].strip("\n")
    refs = "\n".join(line[2:] if line.startswith("  ") else line for line in refs.splitlines())

text = f"""digits.csv.gz -- the scikit-learn "digits" data set
=====================================================

Source: sklearn/datasets/data/digits.csv.gz of the scikit-learn {version}
wheel on PyPI (https://pypi.org/project/scikit-learn/{version}/), copied
unchanged by tools/fetch_digits.sh. Format: gzip-compressed CSV, 1797 rows;
each row holds the 64 pixel values (8x8, row-major, integers 0..16)
followed by the label (0..9).

Origin of the data (from sklearn/datasets/descr/digits.rst)
-------------------------------------------------------------

{note}

References:

{refs.strip()}

scikit-learn licence (from the wheel's COPYING)
-----------------------------------------------

{bsd}
"""
with open(f"{dest}/LICENSE.txt", "w") as f:
    f.write(text)
PY

GOT="$(python3 -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$DEST/digits.csv.gz")"
if [ "$GOT" != "$DIGITS_SHA256" ]; then
    if [ "$SKLEARN_VERSION" = "$PINNED_VERSION" ]; then
        echo "digits.csv.gz: sha256 $GOT, expected $DIGITS_SHA256" >&2
        exit 1
    fi
    echo "warning: digits.csv.gz of scikit-learn $SKLEARN_VERSION differs from $PINNED_VERSION (sha256 $GOT)" >&2
fi
ROWS="$(python3 -c 'import gzip,sys; print(sum(1 for l in gzip.open(sys.argv[1],"rt") if l.strip()))' "$DEST/digits.csv.gz")"
echo "wrote $DEST/digits.csv.gz ($ROWS rows, sha256 $GOT) and LICENSE.txt"
