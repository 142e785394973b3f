#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# meson install script: put an example configuration file in place unless
# one is already there (an operator's edits survive a reinstall), as a
# package manager treats conffiles. usage: install-conf.sh SRC DIR MODE
set -eu
src=$1
dir=${DESTDIR:-}$2
dst=$dir/$(basename "$src")
mkdir -p "$dir"
if [ -e "$dst" ]; then
	echo "Keeping $dst (already there)"
else
	install -m "$3" "$src" "$dst"
	echo "Installing $src to $dir"
fi
