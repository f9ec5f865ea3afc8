#!/usr/bin/env bash
# Build Lambda functions for provided.al2023 on arm64 and zip each one.
#
#   scripts/build-functions.sh NAME...      (make build passes $(FUNCTIONS))
#
# For each NAME, ./functions/NAME is compiled to a static linux/arm64 binary
# named `bootstrap` (the provided.al2023 entry point) and zipped alone to
# $BUILD_DIR/NAME.zip (default build/). LIFECYCLE_GOARCH=amd64 builds x86_64
# binaries instead, only for emulators on x86 hosts (deploy those with
# -c lifecycle:architecture=x86_64; see localstack/README.md). The zip is deterministic (fixed
# timestamp, no extra attributes), so an unchanged function keeps its CDK
# asset hash and `cdk deploy` does not re-upload it.
#
# Fails, naming what is wrong, when a function's source is missing, when a
# binary is not an AArch64 ELF, or when a zip reaches 20 MB.
set -euo pipefail

GO=${GO:-go}
BUILD_DIR=${BUILD_DIR:-build}
GOARCH_TARGET=${LIFECYCLE_GOARCH:-arm64}
# 20 MB keeps every function far below Lambda's 50 MB direct-upload limit and
# its cold start short; a Go handler is normally 5-10 MB zipped.
MAX_ZIP_BYTES=${MAX_ZIP_BYTES:-$((20 * 1024 * 1024))}

die() {
	echo "build-functions: $*" >&2
	exit 1
}

[ $# -gt 0 ] || die "usage: $0 FUNCTION... (e.g. authorize dispatch)"
[ -f go.mod ] || die "run from the repository root (no go.mod in $(pwd))"
# e_machine of the ELF header (offset 18, little endian) for each target.
case "$GOARCH_TARGET" in
arm64) want_machine=b700 ;;
amd64) want_machine=3e00 ;;
*) die "LIFECYCLE_GOARCH must be arm64 or amd64, not $GOARCH_TARGET" ;;
esac

missing=()
for fn in "$@"; do
	[ -f "functions/$fn/main.go" ] || missing+=("functions/$fn/main.go")
done
[ ${#missing[@]} -eq 0 ] || die "missing function sources: ${missing[*]}"

# zip_bootstrap DIR OUT: a zip holding DIR/bootstrap as `bootstrap`, mode 0755.
zip_bootstrap() {
	local dir=$1 out=$2
	rm -f "$out"
	if command -v zip >/dev/null 2>&1; then
		# -X: no uid/gid or extended timestamps; the mtime is pinned below.
		(cd "$dir" && TZ=UTC zip -q -X -9 "$out" bootstrap)
	elif command -v python3 >/dev/null 2>&1; then
		python3 - "$dir/bootstrap" "$out" <<'PY'
import sys, zipfile
src, out = sys.argv[1], sys.argv[2]
info = zipfile.ZipInfo("bootstrap", date_time=(1980, 1, 1, 0, 0, 0))
info.external_attr = (0o100755 << 16)
info.compress_type = zipfile.ZIP_DEFLATED
info.create_system = 3
with open(src, "rb") as f, zipfile.ZipFile(out, "w") as z:
    z.writestr(info, f.read(), compresslevel=9)
PY
	else
		die "neither zip nor python3 is installed (apt-get install zip)"
	fi
}

mkdir -p "$BUILD_DIR"
abs_build=$(cd "$BUILD_DIR" && pwd)
for fn in "$@"; do
	work="$abs_build/$fn"
	rm -rf "$work"
	mkdir -p "$work"
	# lambda.norpc: provided.al2023 speaks the Runtime API only, so the
	# legacy net/rpc server of aws-lambda-go is dead weight.
	GOOS=linux GOARCH=$GOARCH_TARGET CGO_ENABLED=0 "$GO" build \
		-tags lambda.norpc -trimpath -ldflags "-s -w" \
		-o "$work/bootstrap" "./functions/$fn" ||
		die "go build ./functions/$fn failed"
	machine=$(od -An -tx1 -j18 -N2 "$work/bootstrap" | tr -d ' \n')
	[ "$machine" = "$want_machine" ] || die "$fn: bootstrap is not a linux/$GOARCH_TARGET ELF (e_machine $machine)"
	chmod 0755 "$work/bootstrap"
	touch -t 198001010000 "$work/bootstrap"
	zip_bootstrap "$work" "$abs_build/$fn.zip" || die "zip $fn failed"
	rm -rf "$work"
	size=$(wc -c <"$abs_build/$fn.zip" | tr -d ' ')
	[ "$size" -lt "$MAX_ZIP_BYTES" ] ||
		die "$fn.zip is $size bytes, over the $MAX_ZIP_BYTES-byte budget"
	printf '%-10s %s  %8d bytes  linux/%s\n' "$fn" "$BUILD_DIR/$fn.zip" "$size" "$GOARCH_TARGET"
done
