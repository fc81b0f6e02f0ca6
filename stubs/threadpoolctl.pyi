# The part of threadpoolctl (https://github.com/joblib/threadpoolctl, BSD-3) that visa calls:
# visa/engines/contraction/blas.py limits the BLAS numpy loaded while its worker threads multiply.
from contextlib import AbstractContextManager
from typing import Any

class LibController:
    internal_api: str
    num_threads: int

class ThreadpoolController:
    lib_controllers: list[LibController]
    def __init__(self) -> None: ...
    def select(self, **kwargs: Any) -> ThreadpoolController: ...
    def info(self) -> list[dict[str, Any]]: ...
    def limit(self, *, limits: int | None = ..., user_api: str | None = ...) -> AbstractContextManager[Any]: ...

def threadpool_limits(limits: int | None = ..., user_api: str | None = ...) -> AbstractContextManager[Any]: ...
