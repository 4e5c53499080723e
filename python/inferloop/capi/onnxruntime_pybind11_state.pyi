from .._inferloop import Fail as Fail
from .._inferloop import InferloopError as InferloopError
from .._inferloop import InvalidArgument as InvalidArgument
from .._inferloop import NoSuchFile as NoSuchFile
from .._inferloop import NotImplemented as NotImplemented  # noqa: A004

RuntimeException = Fail
InvalidGraph = InvalidArgument
