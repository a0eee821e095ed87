"""Running an FCL entry over several processes, each with its own OpenCL device, through MPI
(docs/distributed.md): `run` in every rank of an `mpiexec`; `distribution` says how an entry
splits and combines, or why it cannot yet."""
from fcl.distributed.plan import Distribution, distribution
from fcl.distributed.run import RankFailed, agree, block_arg, blocks, mpi_world, run

__all__ = ["Distribution", "RankFailed", "agree", "block_arg", "blocks", "distribution", "mpi_world", "run"]
