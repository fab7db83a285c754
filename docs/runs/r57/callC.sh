#!/usr/bin/env bash
# r57 call C, after callB.sh on the same warm machine (carry [".gl"]): prefill 2048 and 512,
# g1 (f690210, before the merge of exp/r55-linear-add) against g2 (8a66fbc, after), alternated.
export XDG_RUNTIME_DIR=/tmp; for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
mkdir -p /tmp/w; for b in g1 g2; do [ -x /tmp/w/$b ] || { xz -dc .gl/$b.xz > /tmp/w/$b; chmod +x /tmp/w/$b; }; done
for r in 1 2; do for b in g1 g2; do echo "=== $b round $r"
  timeout 60 /tmp/w/$b bench --shape qwen3-0.6b --device wgpu:nvidia --decode 16 --prefill 512,2048 2>&1 | grep -E "prefill [0-9]+:|rror"
done; done
