"""The programs the GPU campaigns run (experiments/workloads.py): the PyTorch workloads that
`faultline capture` records (train, models, and holdout6 for the sixth hold-out set) and the
allocator study's training jobs (alloc, training, allocator)."""
