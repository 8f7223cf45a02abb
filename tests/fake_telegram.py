"""A fake Telegram Bot API server on loopback: what the real client library (python-telegram-bot)
talks to in tests, as tests/fake_ollama.py is for the model.

It speaks the Bot API's shape (POST /bot<TOKEN>/<method>, form-encoded parameters whose values
are JSON, answers {"ok": true, "result": ...} or {"ok": false, "error_code", "description"}) for
the methods hearth uses: getMe, getUpdates (long polling: it waits for an update to be pushed, up
to the poll's timeout), sendMessage, editMessageText, answerCallbackQuery, getFile and the file
download. Every call is recorded (`calls`), with its parameters decoded; a test pushes updates
(`push`, or the builders below), takes the platform down (`down`), or makes the next calls of a
method fail (`fail`).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote

TOKEN = "123456:test-token-for-the-fake-bot-api"
BOT = {"id": 999, "is_bot": True, "first_name": "hearth", "username": "hearth_bot"}
DATE = 1_760_000_000


@dataclass
class Call:
    method: str
    params: dict[str, Any]


@dataclass
class Failure:
    times: int
    code: int
    description: str
    extra: dict[str, Any] = field(default_factory=dict)


class FakeTelegram:
    def __init__(self, token: str = TOKEN, port: int = 0) -> None:
        self.token = token
        self.calls: list[Call] = []
        self.updates: list[dict[str, Any]] = []
        self.files: dict[str, bytes] = {}
        self.down = False
        self.failures: dict[str, Failure] = {}
        self.changed = threading.Condition()
        self._next_update = 1
        self._next_message = 100
        self.server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())  # 0: any free port
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeTelegram:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self.changed:
            self.down = True
            self.changed.notify_all()
        self.server.shutdown()
        self.server.server_close()

    # -- what a test does -------------------------------------------------------------------------
    def push(self, update: dict[str, Any]) -> int:
        """Deliver an update (it gets the next id unless it names one: a replay names an old one)."""
        with self.changed:
            if "update_id" not in update:
                update = {"update_id": self._next_update, **update}
                self._next_update += 1
            self.updates.append(update)
            self.changed.notify_all()
            return int(update["update_id"])

    def text(self, sender: int, text: str, *, chat: int | None = None, group: bool = False, **extra: Any) -> int:
        """A message from Telegram user `sender` in their private chat (or a group's)."""
        return self.push({"message": message(sender, text, chat=chat, group=group, **extra)})

    def document(self, sender: int, name: str, data: bytes, caption: str = "", size: int | None = None) -> int:
        """User `sender` sent a file named `name` (its bytes served by getFile and the download),
        with a caption; `size` is what Telegram declares, its length unless given."""
        ident = f"file-{len(self.files) + 1}"
        self.files[ident] = data
        doc = {
            "file_id": ident,
            "file_unique_id": ident,
            "file_name": name,
            "file_size": len(data) if size is None else size,
        }
        sent = message(sender, "", document=doc, caption=caption)
        del sent["text"]
        return self.push({"message": sent})

    def photo(self, sender: int, data: bytes, caption: str = "") -> int:
        """User `sender` sent a photo (Telegram sends its sizes; the largest is the one taken)."""
        ident = f"file-{len(self.files) + 1}"
        self.files[ident] = data
        small = {"file_id": "thumb", "file_unique_id": "thumb", "width": 90, "height": 90, "file_size": 10}
        large = {"file_id": ident, "file_unique_id": f"u{ident}", "width": 800, "height": 600, "file_size": len(data)}
        sent = message(sender, "", photo=[small, large], caption=caption)
        del sent["text"]
        return self.push({"message": sent})

    def press(self, sender: int, data: str, shown: dict[str, Any]) -> int:
        """User `sender` pressed a button whose data is `data` on the message `shown` (a sent one)."""
        query = {"id": f"cb-{len(self.updates)}", "from": person(sender), "chat_instance": "x", "data": data}
        return self.push({"callback_query": {**query, "message": shown}})

    def fail(self, method: str, times: int, code: int = 500, description: str = "Internal Server Error") -> None:
        self.failures[method] = Failure(times, code, description)

    def sent(self, method: str = "sendMessage", chat: int | None = None) -> list[dict[str, Any]]:
        """The parameters of each call of `method` (to one chat), in order."""
        found = [c.params for c in list(self.calls) if c.method == method]
        return [p for p in found if chat is None or int(p.get("chat_id", 0)) == chat]

    def texts(self, chat: int) -> list[str]:
        return [str(p["text"]) for p in self.sent("sendMessage", chat)]

    # -- the server -------------------------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                prefix, path = f"/file/bot{fake.token}/", unquote(self.path)  # the client quotes the token's ':'
                body = fake.files.get(path[len(prefix) :]) if path.startswith(prefix) else None
                self._send(200 if body is not None else 404, body or b"not found", "application/octet-stream")

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length).decode()
                prefix = f"/bot{fake.token}/"
                if not self.path.startswith(prefix):
                    return self._answer(401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
                method = self.path[len(prefix) :]
                params = {k: _json(v) for k, v in parse_qsl(raw)} if raw else {}
                status, answer = fake.call(method, params)
                self._answer(status, answer)

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                self._send(status, json.dumps(body).encode(), "application/json")

            def _send(self, status: int, body: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler

    def call(self, method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.calls.append(Call(method, params))
        if self.down:
            return 502, {"ok": False, "error_code": 502, "description": "Bad Gateway"}
        failure = self.failures.get(method)
        if failure is not None and failure.times > 0:
            failure.times -= 1
            return failure.code, {"ok": False, "error_code": failure.code, "description": failure.description}
        handler = getattr(self, f"_{method}", None)
        if handler is None:
            return 404, {"ok": False, "error_code": 404, "description": "Not Found: method not found"}
        return 200, {"ok": True, "result": handler(params)}

    def _getMe(self, params: dict[str, Any]) -> Any:
        return BOT

    def _getUpdates(self, params: dict[str, Any]) -> Any:
        offset = int(params.get("offset") or 0)
        with self.changed:
            if offset:
                self.updates = [u for u in self.updates if u["update_id"] >= offset]  # confirmed: gone
            if not self.updates and int(params.get("timeout") or 0) > 0:
                self.changed.wait(timeout=float(params["timeout"]))
            return list(self.updates)

    def _sendMessage(self, params: dict[str, Any]) -> Any:
        with self.changed:
            self._next_message += 1
            sent = {"message_id": self._next_message, "date": DATE, "from": BOT, "text": params["text"]}
            sent["chat"] = {"id": int(params["chat_id"]), "type": "private"}
            if "reply_markup" in params:
                sent["reply_markup"] = params["reply_markup"]
            self.changed.notify_all()
            return sent

    def _editMessageText(self, params: dict[str, Any]) -> Any:
        chat = {"id": int(params["chat_id"]), "type": "private"}
        return {"message_id": int(params["message_id"]), "date": DATE, "chat": chat, "text": params["text"]}

    def _answerCallbackQuery(self, params: dict[str, Any]) -> Any:
        return True

    def _getFile(self, params: dict[str, Any]) -> Any:
        ident = str(params["file_id"])
        return {"file_id": ident, "file_unique_id": ident, "file_size": len(self.files[ident]), "file_path": ident}


def person(user_id: int) -> dict[str, Any]:
    return {"id": user_id, "is_bot": False, "first_name": f"user{user_id}"}


def message(sender: int, text: str, *, chat: int | None = None, group: bool = False, **extra: Any) -> dict[str, Any]:
    where = {"id": chat or (-100 if group else sender), "type": "group" if group else "private"}
    return {"message_id": 1, "date": DATE, "chat": where, "from": person(sender), "text": text, **extra}


def _json(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value
