"""A private dbus-daemon and a real `tocsin daemon` on it, for tests and examples' tests.

Nothing here sleeps to synchronise: the bus address is read from dbus-daemon's output, the
daemon's readiness is `gdbus wait` for its bus name, and every wait has a deadline."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]
BUS_CONFIG = REPOSITORY / "contrib" / "test" / "dbus-session.conf"
GATEWAY = "io.github.tocsin.Gateway"


def tocsin_binary() -> str:
    path = os.environ.get("TOCSIN_BIN") or str(REPOSITORY / ".build" / "debug" / "tocsin")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"no tocsin binary at {path}: run `swift build` or set TOCSIN_BIN")
    return path


def stop(process: subprocess.Popen[bytes], timeout: float = 20) -> None:
    """SIGTERM, then SIGKILL after `timeout`; always reaped."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class PrivateBus:
    """`dbus-daemon --nofork --print-address` with the committed test config."""

    def __init__(self, config: Path = BUS_CONFIG) -> None:
        self.process = subprocess.Popen(
            ["dbus-daemon", f"--config-file={config}", "--nofork", "--print-address"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            self.address = self._read_address(deadline=time.monotonic() + 20)
        except BaseException:
            stop(self.process)
            raise

    def _read_address(self, deadline: float) -> str:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        data = b""
        while b"\n" not in data:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(left, 0))
            if not ready:
                raise TimeoutError("dbus-daemon printed no address within 20 s")
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError(f"dbus-daemon exited: {self.process.stderr.read().decode() if self.process.stderr else ''}")
            data += chunk
        return data.split(b"\n", 1)[0].decode().strip()

    @property
    def environment(self) -> dict[str, str]:
        return {"DBUS_SESSION_BUS_ADDRESS": self.address}

    def wait_for_name(self, name: str, timeout: float = 30) -> None:
        """Returns once `name` has an owner on this bus (`gdbus wait` watches NameOwnerChanged)."""
        r = subprocess.run(["gdbus", "wait", "--address", self.address, "--timeout", str(int(timeout)), name],
                           capture_output=True, timeout=timeout + 10)
        if r.returncode != 0:
            raise TimeoutError(f"{name} did not appear on the bus within {timeout} s: {r.stderr.decode()}")

    def close(self) -> None:
        stop(self.process)
        for f in (self.process.stdout, self.process.stderr):
            if f is not None:
                f.close()


class Daemon:
    """`tocsin daemon --config FILE --state-dir DIR` on `bus`, as a user would run it, with its own
    home, UTC, and stdout (the log backend's lines) and stderr in files of its directory."""

    def __init__(self, bus: PrivateBus, config: str, directory: Path | None = None) -> None:
        self.bus = bus
        self.dir = directory or Path(tempfile.mkdtemp(prefix="tocsin-pyclient-"))
        self.config_path = self.dir / "config.toml"
        self.config_path.write_text(config)
        self.state_dir = self.dir / "state"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG")}
        env.update(self.bus.environment)
        env.update({"HOME": str(self.dir), "XDG_CONFIG_HOME": str(self.dir / "config"),
                    "XDG_STATE_HOME": str(self.dir / "state-home"), "TZ": "UTC", "NOTIFY_SOCKET": ""})
        return env

    @property
    def stdout_path(self) -> Path:
        return self.dir / f"stdout-{self.starts}.log"

    @property
    def stderr_path(self) -> Path:
        return self.dir / f"stderr-{self.starts}.log"

    def start(self) -> None:
        self.starts += 1
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.process = subprocess.Popen(
                [tocsin_binary(), "daemon", "--config", str(self.config_path), "--state-dir", str(self.state_dir)],
                env=self.environment, stdout=out, stderr=err)
        try:
            self.bus.wait_for_name(GATEWAY)
        except TimeoutError as e:
            raise TimeoutError(f"{e}; daemon stderr: {self.stderr_path.read_text()[-3000:]}") from None
        if self.process.poll() is not None:
            raise RuntimeError(f"tocsin daemon exited: {self.stderr_path.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)
            self.process = None

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""


class NotificationMock:
    """python-dbusmock's notification server (/usr/bin/python3, Debian's python3-dbusmock) on `bus`:
    the daemon's libnotify backend shows its popups there, and `press` is a person clicking a
    button. Notification ids are handed out from 1 in the order of the Notify calls."""

    NAME = "org.freedesktop.Notifications"
    PATH = "/org/freedesktop/Notifications"

    def __init__(self, bus: PrivateBus, capabilities: str = "body actions") -> None:
        self.bus = bus
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "HOME")}
        env.update(bus.environment)
        self.process = subprocess.Popen(
            ["/usr/bin/python3", "-m", "dbusmock", "--session", "-t", "notification_daemon",
             "-p", '{"capabilities": "%s"}' % capabilities],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            bus.wait_for_name(self.NAME)
        except BaseException:
            self.close()
            raise

    def press(self, notification_id: int, action: str) -> None:
        r = subprocess.run(["gdbus", "call", "--address", self.bus.address, "-d", self.NAME, "-o", self.PATH,
                            "-m", "org.freedesktop.DBus.Mock.EmitSignal", self.NAME, "ActionInvoked", "us",
                            f"[<uint32 {notification_id}>, <'{action}'>]"], capture_output=True, timeout=30)
        if r.returncode != 0:
            raise RuntimeError(f"EmitSignal failed: {r.stderr.decode()}")

    def close(self) -> None:
        stop(self.process)
        if self.process.stderr is not None:
            self.process.stderr.close()
