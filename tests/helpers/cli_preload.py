"""Imported once by the forkserver that ``helpers.cli`` forks the commands from: what every
command of the project imports before it does any work. Nothing here runs a tensor operation, so
the forked commands start with no thread pool to inherit."""
import pandas  # noqa: F401
import sentencepiece  # noqa: F401
import torch
import torch._dynamo  # noqa: F401  (imported by the first optimiser of a process)

import model.checkpoint  # noqa: F401
import model.data  # noqa: F401
import model.search  # noqa: F401

torch.set_num_threads(1)  # as the tests' own processes (OMP_NUM_THREADS=1 in helpers.cli.ENV)
