from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import overload


class State(enum.Enum):
    WAITING = "w"
    DONE = "d"


@dataclass(frozen=True)
class Job:
    id: str
    payload: bytes
    attempt: int = 0


class Queue:
    name: str

    def __init__(self, client: object, name: str) -> None:
        self.name = name

    async def push(self, id: str, payload: bytes | str, /) -> bool:
        return True

    async def push_batch(self, jobs: list[tuple[str, bytes]]) -> list[bool]:
        return []

    @overload
    async def get(self, id: str) -> Job | None: ...
    @overload
    async def get(self, id: str, default: Job) -> Job: ...
    async def get(self, id, default=None):
        return default

    @staticmethod
    def valid(name: str) -> bool:
        return True

    @classmethod
    def of(cls, client: object, *names: str) -> list[Queue]:
        return []
