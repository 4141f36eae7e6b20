"""The programs the GPU campaigns run (experiments/workloads.py): the PyTorch workloads that
`faultline capture` records (train, models, and holdout6 and holdout7 for the sixth and seventh
hold-out sets) and the allocator study's training jobs (alloc, training, allocator)."""
