#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerate all fixtures with real Keras (see README.md). Run from anywhere.
# generate.py writes the fixtures, generate_models.py then saves them as .keras/.h5 model files
# and adds the model_files/model_layer fields (generate.py alone drops them).
# generate_graphs.py writes the whole-model fixtures in graphs/ (see graphs/README.md), once per
# dialect: keras2, keras3 (TensorFlow backend) and keras3_jax (JAX backend).
# Creates the virtual environments first if they are missing (tests/keras/setup_venvs.sh).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV_KERAS2="${VENV_KERAS2:-$HERE/.venv-keras2}"
VENV_KERAS3="${VENV_KERAS3:-$HERE/.venv-keras3}"
VENV_KERAS3_JAX="${VENV_KERAS3_JAX:-$HERE/.venv-keras3-jax}"
if [[ ! -x "$VENV_KERAS2/bin/python" || ! -x "$VENV_KERAS3/bin/python" \
      || ! -x "$VENV_KERAS3_JAX/bin/python" ]]; then
    VENV_KERAS2="$VENV_KERAS2" VENV_KERAS3="$VENV_KERAS3" VENV_KERAS3_JAX="$VENV_KERAS3_JAX" \
        "$HERE/setup_venvs.sh"
fi
"$VENV_KERAS2/bin/python" "$HERE/generate.py" --dialect keras2
"$VENV_KERAS2/bin/python" "$HERE/generate_models.py" --dialect keras2
"$VENV_KERAS3/bin/python" "$HERE/generate.py" --dialect keras3
"$VENV_KERAS3/bin/python" "$HERE/generate_models.py" --dialect keras3
python3 "$HERE/check_fixtures.py"
"$VENV_KERAS2/bin/python" "$HERE/generate_graphs.py" --dialect keras2
"$VENV_KERAS3/bin/python" "$HERE/generate_graphs.py" --dialect keras3
"$VENV_KERAS3_JAX/bin/python" "$HERE/generate_graphs.py" --dialect keras3_jax
