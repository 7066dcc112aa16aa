# Sourced by the device scripts: ex3_workload FILE ROOT writes the
# three examples' workload (matmul and stencil free, vector_add at
# 256,4: 598 plans) to FILE, its specs under ROOT.
ex3_workload() {
  cat > "$1" <<EOF2
name: examples-3
kernels:
  - name: matmul
    spec: $2/examples/matmul/spec.json
  - name: stencil
    spec: $2/examples/stencil/spec.json
  - name: vector_add
    spec: $2/examples/vector_add/spec.json
    config: {block_size_x: [256], work_per_thread: [4]}
EOF2
}
