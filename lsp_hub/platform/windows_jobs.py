"""Windows: a Job Object per child with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, so the system ends the child and what it
starts when the hub's last handle to the job closes, which happens when the hub ends, however it ends.

Used on Windows only (imported by `children` there); written against kernel32 through ctypes."""

from __future__ import annotations

import ctypes
import sys
from ctypes import wintypes

JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS = 9
JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x2000
PROCESS_SET_QUOTA = 0x0100
PROCESS_TERMINATE = 0x0001


class _IoCounters(ctypes.Structure):
    _fields_ = [(name, ctypes.c_ulonglong) for name in (
        "ReadOperationCount", "WriteOperationCount", "OtherOperationCount",
        "ReadTransferCount", "WriteTransferCount", "OtherTransferCount")]


class _BasicLimits(ctypes.Structure):
    _fields_ = [
        ("PerProcessUserTimeLimit", ctypes.c_int64),
        ("PerJobUserTimeLimit", ctypes.c_int64),
        ("LimitFlags", wintypes.DWORD),
        ("MinimumWorkingSetSize", ctypes.c_size_t),
        ("MaximumWorkingSetSize", ctypes.c_size_t),
        ("ActiveProcessLimit", wintypes.DWORD),
        ("Affinity", ctypes.c_size_t),
        ("PriorityClass", wintypes.DWORD),
        ("SchedulingClass", wintypes.DWORD),
    ]


class _ExtendedLimits(ctypes.Structure):
    _fields_ = [
        ("BasicLimitInformation", _BasicLimits),
        ("IoInfo", _IoCounters),
        ("ProcessMemoryLimit", ctypes.c_size_t),
        ("JobMemoryLimit", ctypes.c_size_t),
        ("PeakProcessMemoryUsed", ctypes.c_size_t),
        ("PeakJobMemoryUsed", ctypes.c_size_t),
    ]


class JobObjects:
    """One kill-on-close job per child, by the child's pid."""

    def __init__(self) -> None:
        self._jobs: dict[int, int] = {}
        if sys.platform == "win32":
            kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
            # Handles are pointer-sized: without these, ctypes would pass and return them as 32-bit ints.
            kernel32.CreateJobObjectW.restype = wintypes.HANDLE
            kernel32.CreateJobObjectW.argtypes = [ctypes.c_void_p, wintypes.LPCWSTR]
            kernel32.OpenProcess.restype = wintypes.HANDLE
            kernel32.OpenProcess.argtypes = [wintypes.DWORD, wintypes.BOOL, wintypes.DWORD]
            kernel32.SetInformationJobObject.argtypes = [wintypes.HANDLE, ctypes.c_int, ctypes.c_void_p,
                                                         wintypes.DWORD]
            kernel32.AssignProcessToJobObject.argtypes = [wintypes.HANDLE, wintypes.HANDLE]
            kernel32.TerminateJobObject.argtypes = [wintypes.HANDLE, wintypes.UINT]
            kernel32.CloseHandle.argtypes = [wintypes.HANDLE]
            self._kernel32 = kernel32

    def adopt(self, pid: int) -> str | None:
        """Put `pid` in a job of its own that dies with us; the reason when the system refused."""
        if sys.platform != "win32":
            return "Job Objects exist on Windows only"
        kernel32 = self._kernel32
        job = kernel32.CreateJobObjectW(None, None)
        if not job:
            return f"CreateJobObjectW failed (error {ctypes.get_last_error()})"
        limits = _ExtendedLimits()
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
        if not kernel32.SetInformationJobObject(job, JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS,
                                                ctypes.byref(limits), ctypes.sizeof(limits)):
            error = ctypes.get_last_error()
            kernel32.CloseHandle(job)
            return f"SetInformationJobObject failed (error {error})"
        process = kernel32.OpenProcess(PROCESS_SET_QUOTA | PROCESS_TERMINATE, False, pid)
        if not process:
            error = ctypes.get_last_error()
            kernel32.CloseHandle(job)
            return f"OpenProcess({pid}) failed (error {error})"
        try:
            if not kernel32.AssignProcessToJobObject(job, process):
                error = ctypes.get_last_error()
                kernel32.CloseHandle(job)
                return f"AssignProcessToJobObject failed (error {error})"
        finally:
            kernel32.CloseHandle(process)
        self._jobs[pid] = job
        return None

    def terminate(self, pid: int) -> bool:
        """End the child and everything it started; False when it has no job of ours."""
        job = self._jobs.get(pid)
        if job is None or sys.platform != "win32":
            return False
        self._kernel32.TerminateJobObject(job, 1)
        return True

    def release(self, pid: int) -> None:
        """The child ended: close its job (which ends whatever it left running)."""
        job = self._jobs.pop(pid, None)
        if job is not None and sys.platform == "win32":
            self._kernel32.CloseHandle(job)
