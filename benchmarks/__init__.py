"""What the project measures about itself, apart from the library and the study: step
times and their roofline (`benchmark`), compiled programs' sizes and GPU kernels
(`program_size`), the cost of batch shapes (`shape_costs`), a device's busy time
(`device_profile`), the GPU check and session (`gpu_check`, `gpu_session.sh`), the input
pipeline (`pipeline_benchmark`), the backends side by side (`backends`) and the machine
a figure was measured on (`machine`). Their imports are checked by `.importlinter`."""
