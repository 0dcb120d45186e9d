"""Run-time hooks that let the Cosmos-RL reward service (cosmos-rl 0.4.7) run on a CPU-only test machine.

Loaded by every Python process of the service (this folder is on its ``PYTHONPATH``) and active
only when ``RK_COSMOS_HOOKS=1``. The installed package is not edited and none of its code is
copied here; each hook runs right after the module it adjusts is imported:

- ``cosmos_rl_reward.utils.shmem``: the decoded-tensor buffer shared between the decode and the
  reward processes is allocated on CUDA; here it is a POSIX shared-memory segment
  (``rkcosmos_<cpu segment name>``) that every process maps, removed by its creator.
- ``cosmos_rl_reward.model``: the test handlers of ``rk_cosmos_handlers`` are registered next to
  the service's own.
- ``uvicorn.config``: the HTTP server binds 127.0.0.1 whatever the service asks for.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import os
import sys
import time
from types import ModuleType
from typing import Any

DATA_PREFIX = "rkcosmos_"


def _patch_shmem(module: ModuleType) -> None:
    from multiprocessing import shared_memory

    import numpy as np
    import torch

    status = module.CrossProcessStatus

    def master_init(self: Any, name: str, cuda_maxbytes: int, cpu_maxbytes: int) -> None:
        self.name = name
        self.cuda_maxbytes = cuda_maxbytes
        self.shm_cpu = shared_memory.SharedMemory(create=True, size=cpu_maxbytes)
        data_name = DATA_PREFIX + self.shm_cpu.name.lstrip("/")
        self.shm_data = shared_memory.SharedMemory(create=True, size=cuda_maxbytes, name=data_name)
        self.tensor_cuda = torch.frombuffer(self.shm_data.buf, dtype=torch.uint8)
        self.status = np.ndarray((1,), dtype=np.int32, buffer=self.shm_cpu.buf)
        self.status[0] = status.DEFAULT.value
        self.byte_len = np.ndarray((1,), dtype=np.int32, buffer=self.shm_cpu.buf[4:8])
        self.cpu_maxbytes = self.shm_cpu.size - 8

    def master_init_memory(self: Any) -> None:
        self.set_cpu_info({"data_segment": self.shm_data.name, "nbytes": self.cuda_maxbytes})
        self.status[0] = status.INITIALIZE.value

    def master_del(self: Any) -> None:
        for segment in (getattr(self, "shm_data", None), getattr(self, "shm_cpu", None)):
            if segment is not None:
                with contextlib.suppress(Exception):
                    segment.unlink()

    def handler_init_memory(self: Any) -> None:
        while self.status[0] != status.INITIALIZE.value + self.index:
            time.sleep(0.001)
        info = self.get_data_info()
        self.shm_data = shared_memory.SharedMemory(name=info["data_segment"])
        self.tensor_cuda = torch.frombuffer(self.shm_data.buf, dtype=torch.uint8)
        self.cuda_maxbytes = self.tensor_cuda.numel()
        if self.index + 1 == self.total_handler:
            self.status[0] = status.DECODE.value
        else:
            self.status[0] = status.INITIALIZE.value + self.index + 1

    module.CrossProcessMaster.__init__ = master_init
    module.CrossProcessMaster.init_memory = master_init_memory
    module.CrossProcessMaster.__del__ = master_del
    module.CrossProcessHandler.init_memory = handler_init_memory


def _register_handlers(module: ModuleType) -> None:
    import rk_cosmos_handlers  # noqa: F401  (registers on import)


def _bind_loopback(module: ModuleType) -> None:
    original = module.Config.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs["host"] = "127.0.0.1"
        original(self, *args, **kwargs)

    module.Config.__init__ = init


PATCHES = {
    "cosmos_rl_reward.utils.shmem": _patch_shmem,
    "cosmos_rl_reward.model": _register_handlers,
    "uvicorn.config": _bind_loopback,
}


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds the listed modules with the other finders and runs their hook after they execute."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name not in PATCHES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            PATCHES[name](module)

        loader.exec_module = exec_module
        return spec


if os.environ.get("RK_COSMOS_HOOKS") == "1":
    sys.meta_path.insert(0, _AfterImport())
