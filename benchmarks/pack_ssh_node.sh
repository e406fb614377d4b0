#!/usr/bin/env bash
# Packs what benchmarks/gpu_ssh_node.sh needs on the GPU machine, which has neither an sshd nor
# the workbench's libraries: this machine's OpenSSH sshd and ssh-keygen, the workbench CLI of
# build/ (no Qt: spdlog, fmt, SQLite, libssh), and every shared library they need except glibc and
# the C++ runtime (the GPU machine's own are newer). Into .gpu-ssh/ (git-ignored), to be named in
# the device tool's `carry`:
#   benchmarks/pack_ssh_node.sh            (after building moe-workbench-cli in build/)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT="$ROOT/.gpu-ssh"
CLI="$ROOT/build/bin/moe-workbench-cli"
[ -x "$CLI" ] || { echo "no $CLI: cmake --build build --target moe-workbench-cli first" >&2; exit 1; }
for tool in /usr/sbin/sshd /usr/bin/ssh-keygen; do
    [ -x "$tool" ] || { echo "no $tool here: apt-get install openssh-server openssh-client" >&2; exit 1; }
done
rm -rf "$OUT" && mkdir -p "$OUT/bin" "$OUT/lib"
cp /usr/sbin/sshd /usr/bin/ssh-keygen "$CLI" "$OUT/bin/"
# glibc's own libraries and the C++ runtime stay the node's.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libstdc\+\+\.so|libgcc_s\.so)'
for bin in "$OUT"/bin/*; do
    ldd "$bin" | awk '$3 ~ /^\// {print $1, $3}' | while read -r name path; do
        [[ $name =~ $skip ]] && continue
        cp -L "$path" "$OUT/lib/$name"
    done
done
du -sh "$OUT" | awk '{print "packed " $1 " into .gpu-ssh (bin: sshd, ssh-keygen, moe-workbench-cli; lib: " n " libraries)"}' \
    n="$(ls "$OUT/lib" | wc -l)"
