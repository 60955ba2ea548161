// The Missive web client: create, join, play and watch matches, and audit finished ones, over
// the public HTTP/JSON API and its Server-Sent Events stream only. Plain JavaScript, served by
// the server itself; each game's rendering lives in games.js (window.MissiveGames).
//
// Seat tokens are kept in localStorage, one entry per match, so a player can close the tab and
// come back days later. The watch stream is read with fetch() because EventSource cannot send
// the `authorization` header a seat's stream needs.
"use strict";

(function () {
  const Games = window.MissiveGames;
  const { present, raw, useCatalogue } = window.MissiveKit;
  const app = document.getElementById("app");

  // ---- small helpers ----------------------------------------------------------------------

  /** Builds an element; strings become text nodes, so player names are never parsed as HTML. */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else if (k === "class") el.className = v;
      else if (k === "dataset") Object.assign(el.dataset, v);
      else if (k === "value") el.value = v;
      else el.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  function randomHex(bytes) {
    const a = new Uint8Array(bytes);
    crypto.getRandomValues(a);
    return Array.from(a, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  // crypto.randomUUID only exists in secure contexts; a server reached over plain HTTP on a LAN
  // address is not one.
  function uuid() {
    const x = randomHex(16);
    return `${x.slice(0, 8)}-${x.slice(8, 12)}-4${x.slice(13, 16)}-a${x.slice(17, 20)}-${x.slice(20)}`;
  }

  const num = (x) => Number(x ?? 0);
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  // ---- the API ----------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, body) {
      super(body.message || `HTTP ${status}`);
      this.status = status;
      this.code = body.code;
      this.rule = body.rule;
    }
  }

  async function api(method, path, { body, token } = {}) {
    const headers = {};
    if (body !== undefined) headers["content-type"] = "application/json";
    if (token) headers.authorization = `Bearer ${token}`;
    const res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let json = {};
    try {
      json = text ? JSON.parse(text) : {};
    } catch (_) {
      json = { message: text };
    }
    if (!res.ok) throw new ApiError(res.status, json);
    return json;
  }

  // ---- seats held by this browser ---------------------------------------------------------

  const PREFIX = "missive.match.";
  const seats = {
    get(id) {
      try {
        return JSON.parse(localStorage.getItem(PREFIX + id)) || { seats: {} };
      } catch (_) {
        return { seats: {} };
      }
    },
    put(id, data) {
      localStorage.setItem(PREFIX + id, JSON.stringify(data));
    },
    add(id, seat, token, player, kind) {
      const data = seats.get(id);
      data.seats[seat] = { token, player };
      data.current = seat;
      data.kind = kind;
      data.at = new Date().toISOString();
      seats.put(id, data);
    },
    invites(id, list) {
      const data = seats.get(id);
      data.invites = Object.fromEntries(list.map((i) => [i.seat ?? 0, i.code]));
      data.at = data.at || new Date().toISOString();
      seats.put(id, data);
    },
    cancelToken(id, token) {
      const data = seats.get(id);
      data.cancel = token;
      data.at = data.at || new Date().toISOString();
      seats.put(id, data);
    },
    remove(id, seat) {
      const data = seats.get(id);
      delete data.seats[seat];
      if (data.current === seat) data.current = Object.keys(data.seats).map(Number)[0];
      if (Object.keys(data.seats).length || data.invites || data.cancel) seats.put(id, data);
      else localStorage.removeItem(PREFIX + id);
    },
    all() {
      const out = [];
      for (let i = 0; i < localStorage.length; i++) {
        const key = localStorage.key(i);
        if (key && key.startsWith(PREFIX)) out.push({ id: key.slice(PREFIX.length), ...seats.get(key.slice(PREFIX.length)) });
      }
      return out.sort((a, b) => String(b.at).localeCompare(String(a.at)));
    },
  };

  // ---- signing in: a player token (a JWT) from the game's own backend ----------------------
  //
  // Optional. Signed in, a join binds the seat to the player, the page acts with the player
  // token where this browser holds no seat token, and the home page lists the player's matches
  // from the server (ListMyMatches) rather than from this browser's memory.

  const PLAYER_TOKEN = "missive.playerToken";
  const playerToken = () => localStorage.getItem(PLAYER_TOKEN);

  /** The name a player token carries (its `name`, else its `sub`), read without checking it:
   *  the server checks it on every call. */
  function tokenName(jwt) {
    try {
      const part = jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      const bytes = Uint8Array.from(atob(part), (c) => c.charCodeAt(0));
      const claims = JSON.parse(new TextDecoder().decode(bytes));
      return claims.name || claims.sub || "player";
    } catch (_) {
      return "player";
    }
  }

  function signInPanel() {
    const box = h("div", { class: "panel", id: "signin" });
    const jwt = playerToken();
    if (!jwt) {
      const field = h("input", { id: "player-token", placeholder: "player token (JWT)", autocomplete: "off" });
      const err = h("div");
      const submit = async (ev) => {
        ev.preventDefault();
        const token = field.value.trim();
        if (!token) return;
        try {
          await api("GET", "/v1/me/matches?limit=1", { token }); // refused unless the server takes it
          localStorage.setItem(PLAYER_TOKEN, token);
          home();
        } catch (e) {
          err.replaceChildren(h("p", { class: "error" }, `This token is refused: ${e.message}`));
        }
      };
      box.append(h("details", {}, h("summary", {}, "Sign in with a player token (optional)"),
        h("p", { class: "muted small" }, "If the game's site gave you a player token, paste it here: your seats follow you to any device, and your matches are listed below."),
        h("form", { class: "row", onsubmit: submit }, field, h("button", { type: "submit", id: "signin-button" }, "Sign in")), err));
      return box;
    }
    const inbox = h("ul", { class: "matches", id: "inbox" }, h("li", { class: "muted" }, "…"));
    box.append(
      h("div", { class: "row" }, h("h2", {}, "My matches"),
        h("span", { class: "muted small", id: "signed-in" }, `signed in as ${tokenName(jwt)}`),
        h("button", { class: "secondary", type: "button", id: "signout", onclick: () => { localStorage.removeItem(PLAYER_TOKEN); home(); } }, "Sign out")),
      inbox);
    api("GET", "/v1/me/matches?limit=50", { token: jwt }).then((res) => {
      const list = res.matches || [];
      inbox.replaceChildren(...(list.length ? list.map((m) => {
        const info = m.match || {};
        return h("li", { dataset: { match: info.matchId } },
          h("a", { href: `#/m/${info.matchId}` }, `${Games[info.kind]?.name || info.kind} ${String(info.matchId).slice(0, 8)}`),
          " ", h("span", { class: "muted small" }, `seat ${num(m.seat)} · ${statusText(info.status)}`),
          m.yourTurn ? h("span", { class: "badge turn" }, "your turn") : null,
          m.deadline ? h("span", { class: "muted small" }, ` due ${new Date(m.deadline).toLocaleString()}`) : null);
      }) : [h("li", { class: "muted" }, "No match yet: seats you take while signed in are listed here.")]));
    }).catch((e) => inbox.replaceChildren(h("li", { class: "error" }, e.message)));
    return box;
  }

  // ---- routing ----------------------------------------------------------------------------

  let current = null; // the open match page, so leaving it stops its stream

  function route() {
    if (current) current.close();
    current = null;
    // A match's page; an invitation's link adds the invite code for its seat.
    const m = location.hash.match(/^#\/m\/([0-9a-fA-F-]{36})(?:\/invite\/([0-9a-fA-F]{32}))?/);
    if (m) {
      current = new MatchPage(m[1], m[2]);
      current.start();
    } else {
      home();
    }
  }
  window.addEventListener("hashchange", route);

  // ---- home: create a match, my matches, open matches ---------------------------------------

  function home() {
    document.title = "Missive";
    const err = h("div");
    const optionsBox = h("div");
    const botsBox = h("div", { class: "row" });
    const kind = h("select", { id: "kind", name: "kind" },
      Object.entries(Games).map(([k, g]) => h("option", { value: k }, g.name)));
    const seatCount = h("input", { id: "seat-count", type: "number", min: 2, max: 6, value: 2 });
    const player = h("input", { id: "player", placeholder: "your name", value: localStorage.getItem("missive.player") || "", maxlength: 64 });
    const timeout = h("input", { id: "turn-timeout", type: "number", min: 1, placeholder: "none" });
    const timeoutUnit = h("select", { id: "turn-timeout-unit" },
      h("option", { value: 60 }, "minutes"), h("option", { value: 3600 }, "hours"), h("option", { value: 86400 }, "days"));
    const joinSelf = h("input", { id: "join-self", type: "checkbox", checked: true });

    function refresh() {
      const g = Games[kind.value];
      seatCount.min = g.minSeats;
      seatCount.max = g.maxSeats;
      if (num(seatCount.value) > g.maxSeats) seatCount.value = g.maxSeats;
      if (num(seatCount.value) < g.minSeats) seatCount.value = g.minSeats;
      optionsBox.replaceChildren(g.optionsForm(h));
      const n = num(seatCount.value);
      const kept = Array.from(botsBox.querySelectorAll("select")).map((s) => s.value);
      botsBox.replaceChildren(
        ...Array.from({ length: n }, (_, seat) =>
          h("label", {}, `seat ${seat}`,
            h("select", { class: "bot", dataset: { seat } },
              h("option", { value: "" }, "player"),
              h("option", { value: "invite" }, "invited friend"),
              h("option", { value: "random" }, "bot: random"),
              g.counting ? h("option", { value: "counting" }, "bot: counting") : null))));
      botsBox.querySelectorAll("select").forEach((s, i) => { if (kept[i] && s.querySelector(`option[value="${kept[i]}"]`)) s.value = kept[i]; });
    }
    kind.addEventListener("change", refresh);
    seatCount.addEventListener("change", refresh);

    async function create(ev) {
      ev.preventDefault();
      err.replaceChildren();
      const g = Games[kind.value];
      const name = player.value.trim();
      const chosen = Array.from(botsBox.querySelectorAll("select"));
      const bots = chosen.filter((s) => s.value && s.value !== "invite")
        .map((s) => ({ seat: num(s.dataset.seat), strategy: s.value }));
      const inviteSeats = chosen.filter((s) => s.value === "invite").map((s) => num(s.dataset.seat));
      // The seats anyone may take: a join without a code never takes an invited one.
      const humans = num(seatCount.value) - bots.length - inviteSeats.length;
      const signedIn = Boolean(playerToken());
      if (joinSelf.checked && humans > 0 && !name && !signedIn) {
        err.replaceChildren(h("p", { class: "error" }, "Give your name to take a seat."));
        return;
      }
      const request = {
        requestId: uuid(),
        seatCount: num(seatCount.value),
        options: g.readOptions(optionsBox),
        bots,
        inviteSeats,
      };
      if (timeout.value) request.turnTimeoutSecs = num(timeout.value) * num(timeoutUnit.value);
      const button = ev.submitter;
      if (button) button.disabled = true;
      try {
        const created = await api("POST", "/v1/matches", { body: request });
        const id = created.match.matchId;
        // Invite codes are shown once: keep them with the match, for its page to hand out.
        if ((created.invites || []).length) seats.invites(id, created.invites);
        // So is the cancel token: with it the creator can call the match off while it is open.
        if (created.cancelToken) seats.cancelToken(id, created.cancelToken);
        if (joinSelf.checked && humans > 0) {
          if (name) localStorage.setItem("missive.player", name);
          await joinMatch(id, name, created.match.kind);
        }
        location.hash = `#/m/${id}`;
      } catch (e) {
        err.replaceChildren(h("p", { class: "error" }, e.message));
        if (button) button.disabled = false;
      }
    }

    const mine = seats.all();
    const open = h("ul", { class: "matches" }, h("li", { class: "muted" }, "…"));
    app.replaceChildren(
      h("div", { class: "grid2" },
        h("form", { class: "panel", id: "create", onsubmit: create },
          h("h1", {}, "New match"),
          h("div", { class: "row" },
            h("label", {}, "Game", kind),
            h("label", {}, "Seats", seatCount),
            h("label", {}, "Your name", player)),
          optionsBox,
          h("h3", {}, "Who plays each seat"),
          botsBox,
          h("div", { class: "row" },
            h("label", {}, "Turn deadline (optional)", h("span", { class: "row" }, timeout, timeoutUnit)),
            h("label", { class: "inline" }, joinSelf, "take the first free seat")),
          h("p", {}, h("button", { type: "submit", id: "create-button" }, "Create match")),
          err),
        h("div", {},
          signInPanel(),
          h("div", { class: "panel" },
            h("h2", {}, "Your matches in this browser"),
            mine.length
              ? h("ul", { class: "matches" }, mine.map((m) =>
                h("li", {}, h("a", { href: `#/m/${m.id}` }, `${Games[m.kind]?.name || m.kind || "match"} ${m.id.slice(0, 8)}`),
                  " ", h("span", { class: "muted small" }, "as ", Object.values(m.seats).map((s) => s.player).join(", ")))))
              : h("p", { class: "muted" }, "None yet: seats you take are remembered in this browser.")),
          h("div", { class: "panel" }, h("h2", {}, "Open matches"), open))));
    refresh();
    api("GET", "/v1/matches?limit=20").then((res) => {
      const list = res.matches || [];
      open.replaceChildren(...(list.length ? list.map((m) =>
        h("li", {}, h("a", { href: `#/m/${m.matchId}` }, `${Games[m.kind]?.name || m.kind} ${m.matchId.slice(0, 8)}`),
          " ", h("span", { class: "muted small" }, `${(m.seats || []).filter((s) => s.taken).length}/${m.seatCount} seated`)))
        : [h("li", { class: "muted" }, "No match is waiting for players.")]));
    }).catch((e) => open.replaceChildren(h("li", { class: "error" }, e.message)));
  }

  /** Takes a seat; signed in, the seat is bound to the player (the token's name, unless one
   *  is given). */
  async function joinMatch(id, player, kind, seat, inviteCode) {
    const body = { requestId: uuid(), nonce: randomHex(16) };
    if (player) body.player = player;
    if (seat !== undefined) body.seat = seat;
    if (inviteCode) body.inviteCode = inviteCode;
    const token = playerToken() || undefined;
    let res;
    try {
      res = await api("POST", `/v1/matches/${id}/join`, { body, token });
    } catch (e) {
      // A lost answer: the same request id answers the same seat and token.
      if (e instanceof ApiError) throw e;
      await sleep(500);
      res = await api("POST", `/v1/matches/${id}/join`, { body, token });
    }
    const seated = res.seat ?? 0;
    const name = (res.match?.seats || res.view?.match?.seats || []).find((s) => (s.seat ?? 0) === seated)?.player;
    seats.add(id, seated, res.seatToken, player || name || "me", kind || res.match?.kind);
    return res;
  }

  // ---- a match -----------------------------------------------------------------------------

  class MatchPage {
    constructor(id, invite) {
      this.id = id;
      this.invite = invite || null; // the invite code of the link that opened the page
      this.view = null;
      this.entries = [];
      this.history = null;
      this.step = null;
      this.busy = false;
      this.error = null;
      this.abort = null;
      this.closed = false;
    }

    get held() {
      return seats.get(this.id);
    }

    get seatToken() {
      const held = this.held;
      const seat = held.seats[held.current];
      return seat ? seat.token : null;
    }

    /** This browser's seat token for the match, else the signed-in player's token (which
     *  is a spectator's where the player holds no seat). */
    get token() {
      return this.seatToken || playerToken();
    }

    close() {
      this.closed = true;
      if (this.abort) this.abort.abort();
    }

    async start() {
      app.replaceChildren(h("p", { class: "muted" }, "Loading the match…"));
      try {
        await this.load();
      } catch (e) {
        app.replaceChildren(h("p", { class: "error" }, `This match cannot be shown: ${e.message}`), h("p", {}, h("a", { href: "#/" }, "Back")));
        return;
      }
      this.watch();
    }

    async load() {
      let token = this.token;
      let res;
      try {
        res = await api("GET", `/v1/matches/${this.id}/view`, { token });
      } catch (e) {
        if (e.status !== 401 || !token) throw e;
        // The token no longer holds the seat (left before the start), or the player token
        // has expired: forget it.
        if (this.seatToken) seats.remove(this.id, this.held.current);
        else localStorage.removeItem(PLAYER_TOKEN);
        token = this.token;
        res = await api("GET", `/v1/matches/${this.id}/view`, { token });
      }
      this.view = res.view;
      const history = await api("GET", `/v1/matches/${this.id}/history`, { token });
      this.entries = history.entries || [];
      if (history.audit) this.history = history;
      this.render();
    }

    /** Applies a view if it is newer than the one shown. */
    accept(view, entries) {
      if (!view) return false;
      if (this.view && num(view.version) < num(this.view.version)) return false;
      if (entries) this.entries.push(...entries);
      this.view = view;
      this.render();
      if (this.over) {
        if (this.abort) this.abort.abort(); // nothing more will happen
        if (!this.history) this.loadAudit();
      }
      return true;
    }

    get over() {
      const s = this.view?.match?.status;
      return s === "MATCH_STATUS_FINISHED" || s === "MATCH_STATUS_ABANDONED";
    }

    async loadAudit() {
      try {
        const history = await api("GET", `/v1/matches/${this.id}/history`, { token: this.token });
        this.history = history;
        this.entries = history.entries || this.entries;
        this.render();
      } catch (e) {
        this.error = e.message;
        this.render();
      }
    }

    /** Follows the match's updates for as long as the page is open, reconnecting after
     *  `afterVersion` when the stream drops. */
    async watch() {
      let backoff = 500;
      while (!this.closed && !this.over) {
        this.abort = new AbortController();
        const token = this.token;
        try {
          const headers = { accept: "text/event-stream" };
          if (token) headers.authorization = `Bearer ${token}`;
          const res = await fetch(`/v1/matches/${this.id}/watch?afterVersion=${num(this.view.version)}`, { headers, signal: this.abort.signal });
          if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => ({})));
          this.setLive(true);
          backoff = 500;
          const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
          let buffer = "";
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buffer += value.replace(/\r\n/g, "\n");
            let cut;
            while ((cut = buffer.indexOf("\n\n")) >= 0) {
              this.onSse(buffer.slice(0, cut));
              buffer = buffer.slice(cut + 2);
            }
            if (token !== this.token) break; // the seat shown changed
          }
        } catch (e) {
          if (this.closed) return;
          if (e instanceof ApiError && e.status < 500 && e.status !== 408) {
            this.error = `live updates stopped: ${e.message}`;
            this.render();
            return;
          }
        } finally {
          this.setLive(false);
        }
        if (this.closed || this.over) return;
        await sleep(backoff);
        backoff = Math.min(backoff * 2, 15000);
        // Catch up on what the stream may have missed.
        await this.refreshView().catch(() => {});
      }
    }

    onSse(block) {
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const i = line.indexOf(":");
        const field = i < 0 ? line : line.slice(0, i);
        const value = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
        if (field === "event") event = value;
        else if (field === "data") data.push(value);
      }
      if (!data.length) return;
      const payload = JSON.parse(data.join("\n"));
      if (event === "update") this.accept(payload.view, payload.entries || []);
      else if (event === "error") {
        this.error = payload.message || "the stream failed";
        this.render();
      }
    }

    setLive(live) {
      const el = document.getElementById("live");
      if (el) el.textContent = live ? "● live" : "○ reconnecting";
      if (el) el.className = live ? "ok small" : "muted small";
      this.live = live;
    }

    async refreshView() {
      const res = await api("GET", `/v1/matches/${this.id}/view`, { token: this.token });
      const history = await api("GET", `/v1/matches/${this.id}/history`, { token: this.token });
      this.entries = history.entries || [];
      this.view = null;
      this.accept(res.view);
    }

    async act(action) {
      if (this.busy) return;
      this.busy = true;
      this.error = null;
      this.render();
      const body = { requestId: uuid(), action, expectedVersion: String(num(this.view.version)) };
      try {
        let res;
        try {
          res = await api("POST", `/v1/matches/${this.id}/act`, { body, token: this.token });
        } catch (e) {
          if (e instanceof ApiError && e.status !== 503 && e.status !== 408) throw e;
          await sleep(700); // no answer: the same request id is applied once
          res = await api("POST", `/v1/matches/${this.id}/act`, { body, token: this.token });
        }
        this.busy = false;
        // The stream may have brought newer versions first: then show those, no longer busy.
        if (!this.accept(res.view)) this.render();
      } catch (e) {
        this.busy = false;
        this.error = e.rule ? `${e.message} (${e.rule})` : e.message;
        await this.refreshView().catch(() => {});
        this.render();
      }
    }

    async join(player, seat) {
      try {
        if (player) localStorage.setItem("missive.player", player);
        await joinMatch(this.id, player, this.view.match.kind, seat, this.invite);
        // An invitation is used once: the page goes on without its code.
        if (this.invite) location.hash = `#/m/${this.id}`;
        else this.restart();
      } catch (e) {
        this.error = e.message;
        this.render();
      }
    }

    async leave() {
      const held = this.held;
      if (!confirm(this.view.match.status === "MATCH_STATUS_OPEN" ? "Give up your seat?" : "Leave and abandon the match for everyone?")) return;
      try {
        await api("POST", `/v1/matches/${this.id}/leave`, { body: { requestId: uuid() }, token: this.token });
        seats.remove(this.id, held.current);
        this.restart();
      } catch (e) {
        this.error = e.message;
        this.render();
      }
    }

    restart() {
      this.close();
      current = new MatchPage(this.id);
      current.start();
    }

    playerName(seat) {
      const s = (this.view.match.seats || []).find((x) => (x.seat ?? 0) === seat);
      if (!s || !s.taken) return `seat ${seat}`;
      if (s.bot) return `bot ${seat}`;
      return s.player || `seat ${seat}`;
    }

    // ---- rendering ----

    render() {
      if (this.closed || !this.view) return;
      const view = this.view;
      const match = view.match;
      const game = Games[match.kind];
      const held = this.held;
      // A view for a token is that token's seat, even if a seat 0 were left out of the JSON.
      const mySeat = view.seat ?? (this.seatToken ? num(held.current) : undefined);
      const ctx = { h, view, seat: mySeat, name: (s) => this.playerName(s), game: view.game?.[game?.field] };
      document.title = `${game ? game.name : match.kind} · Missive`;
      const awaiting = (view.awaiting || []).map((s) => s ?? 0);
      const deadlines = new Map((view.deadlines || []).map((d) => [d.seat ?? 0, d.dueAt]));
      const share = `${location.origin}/#/m/${this.id}`;
      const heldSeats = Object.keys(held.seats).map(Number);
      const freeSeats = (match.seats || []).filter((s) => !s.taken).map((s) => s.seat ?? 0);

      const root = h("div", {
        id: "match",
        dataset: {
          version: num(view.version),
          status: match.status,
          seat: mySeat ?? "",
          busy: this.busy ? "1" : "",
          actions: (view.legalActions || []).length,
        },
      });

      root.append(
        h("div", { class: "panel" },
          h("div", { class: "status-bar" },
            h("h1", {}, game ? game.name : match.kind),
            h("span", { id: "status" }, statusText(match.status)),
            h("span", { class: "muted small" }, `version ${num(view.version)}`),
            this.over ? null : h("span", { id: "live", class: this.live ? "ok small" : "muted small" }, this.live ? "● live" : "○ connecting"),
            match.fixedDeck ? h("span", { class: "badge out" }, "fixed deck") : null),
          h("div", { class: "row share" },
            // Once every seat is taken the link only brings spectators: it shrinks to a button.
            match.status === "MATCH_STATUS_OPEN"
              ? h("label", {}, "Invite link", h("input", { id: "share-link", readonly: true, value: share, onfocus: (e) => e.target.select() }))
              : null,
            h("button", { class: "secondary", type: "button", id: "copy-link", onclick: () => navigator.clipboard?.writeText(share) }, match.status === "MATCH_STATUS_OPEN" ? "Copy" : "Copy the match's link"),
            game ? h("span", { class: "muted small" }, game.describeOptions(match.options?.[game.field] || {})) : null,
            match.turnTimeoutSecs ? h("span", { class: "muted small" }, `turn deadline ${duration(match.turnTimeoutSecs)}`) : null),
          match.status === "MATCH_STATUS_OPEN" ? this.invitesBlock(freeSeats) : null,
          match.status === "MATCH_STATUS_OPEN" && this.held.cancel
            ? h("div", { class: "row" },
              h("button", { class: "secondary", type: "button", id: "cancel-match", onclick: () => this.cancel() }, "Cancel this match"),
              h("span", { class: "muted small" }, "Nobody has to wait for it any more; it no longer counts among your open matches."))
            : null,
          h("div", { class: "seats" },
            (match.seats || []).map((s) => {
              const seat = s.seat ?? 0;
              const due = deadlines.get(seat);
              return h("div", { class: `seat${awaiting.includes(seat) ? " awaited" : ""}${seat === mySeat ? " mine" : ""}` },
                h("b", {}, s.taken ? this.playerName(seat) : "free"), " ",
                h("span", { class: "muted small" }, `seat ${seat}`),
                s.bot ? h("span", { class: "badge", title: s.player }, (s.player || "bot").replace("bot:", "bot, ")) : null,
                seat === mySeat ? h("span", { class: "badge you" }, "you") : null,
                awaiting.includes(seat) ? h("span", { class: "badge turn" }, "to play") : null,
                due ? h("div", { class: "small muted" }, `due ${new Date(due).toLocaleString()}`) : null);
            })),
          heldSeats.length > 1
            ? h("div", { class: "row" }, "Playing as",
              heldSeats.map((s) => h("button", {
                class: s === held.current ? "" : "secondary", type: "button",
                onclick: () => { const d = seats.get(this.id); d.current = s; seats.put(this.id, d); this.restart(); },
              }, `${held.seats[s].player} (seat ${s})`)))
            : null));

      if (this.error) root.append(h("p", { class: "error", id: "error" }, this.error));

      if (match.status === "MATCH_STATUS_OPEN") root.append(this.joinPanel(freeSeats, heldSeats.length > 0));

      if (view.outcome || this.over) {
        const outcome = this.outcomePanel(ctx, game);
        if (this.over && mySeat !== undefined) {
          outcome.append(h("div", { class: "row rematch" },
            h("button", { type: "button", id: "rematch", onclick: (e) => { e.target.disabled = true; this.rematch(); } }, "Rematch"),
            h("span", { class: "small muted" }, "The same game for the same players: it starts once each of them has clicked Rematch.")));
        }
        root.append(outcome);
      }

      if (game && ctx.game) {
        root.append(h("div", { class: "panel", id: "table" }, game.table(ctx)));
      }
      const rules = game?.rules?.(ctx);
      if (rules) root.append(h("details", { class: "panel", id: "rules" }, h("summary", {}, `How ${game.name} plays: the rules and every card`), rules));

      const actions = view.legalActions || [];
      if (game && mySeat !== undefined && !this.over && match.status !== "MATCH_STATUS_OPEN") {
        root.append(this.actionsPanel(ctx, game, actions, awaiting));
      }

      root.append(this.logPanel(ctx, game));
      if (this.history?.audit) root.append(this.auditPanel(ctx, game));

      if (mySeat !== undefined && !this.over) {
        root.append(h("p", {}, h("button", { class: "secondary", type: "button", id: "leave", onclick: () => this.leave() },
          match.status === "MATCH_STATUS_OPEN" ? "Give up my seat" : "Leave (abandons the match)")));
      }
      app.replaceChildren(root);
    }

    joinPanel(freeSeats, holdsOne) {
      const invited = (this.view.match.invitedSeats || []).map((s) => s ?? 0);
      // Without an invitation only the seats no one is invited to may be taken.
      const open = freeSeats.filter((s) => !invited.includes(s));
      const signedIn = Boolean(playerToken());
      const name = h("input", { id: "join-name", placeholder: signedIn ? "as signed in" : "your name", maxlength: 64, value: localStorage.getItem("missive.player") || "" });
      const seat = h("select", { id: "join-seat" }, h("option", { value: "" }, "first free seat"), open.map((s) => h("option", { value: s }, `seat ${s}`)));
      const submit = (ev) => {
        ev.preventDefault();
        if (!name.value.trim() && !signedIn) return;
        ev.submitter && (ev.submitter.disabled = true);
        this.join(name.value.trim(), this.invite || seat.value === "" ? undefined : num(seat.value));
      };
      const waiting = `Waiting for ${freeSeats.length} more player${freeSeats.length === 1 ? "" : "s"}; the match starts when every seat is taken.`;
      if (!this.invite && !open.length) {
        return h("div", { class: "panel", id: "join" }, h("p", { class: "muted small" }, `${waiting} The free seats are held for invited players: join through your invitation's link.`));
      }
      return h("form", { class: "panel", id: "join", onsubmit: submit },
        h("h2", {}, this.invite ? "You are invited: join this match" : holdsOne ? "Take another seat (several players on this device)" : "Join this match"),
        h("p", { class: "muted small" }, `${waiting} Share the match's link.`),
        h("div", { class: "row" }, h("label", {}, "Name", name), this.invite ? null : h("label", {}, "Seat", seat),
          h("button", { type: "submit", id: "join-button" }, "Join")));
    }

    /** The links of the seats held for invited players, for the creator to hand out. */
    invitesBlock(freeSeats) {
      const codes = this.held.invites || {};
      const links = freeSeats.filter((s) => codes[s]).map((s) => {
        const link = `${location.origin}/#/m/${this.id}/invite/${codes[s]}`;
        return h("label", {}, `Invitation for seat ${s} (send it to that friend only)`,
          h("input", { id: `invite-${s}`, readonly: true, value: link, onfocus: (e) => e.target.select() }));
      });
      return links.length ? h("div", { class: "share invites" }, links) : null;
    }

    /** Calls the open match off with the cancel token its creation returned. */
    async cancel() {
      if (!confirm("Cancel this match? Nobody will be able to join it.")) return;
      try {
        await api("POST", `/v1/matches/${this.id}/cancel`, { body: { cancelToken: this.held.cancel, requestId: uuid() } });
        const data = seats.get(this.id);
        delete data.cancel;
        seats.put(this.id, data);
        await this.refreshView();
      } catch (e) {
        alert(e.message);
      }
    }

    /** A rematch: the same game for the same seats. Every holder's click reaches the same one. */
    async rematch() {
      try {
        const res = await api("POST", `/v1/matches/${this.id}/rematch`, { body: {}, token: this.token });
        const id = res.match.matchId;
        const mine = this.held.seats[this.held.current];
        seats.add(id, res.seat ?? 0, res.seatToken, mine?.player || tokenName(playerToken() || ""), res.match.kind);
        location.hash = `#/m/${id}`;
      } catch (e) {
        this.error = e.message;
        this.render();
      }
    }

    outcomePanel(ctx, game) {
      const outcome = this.view.outcome || {};
      const winners = (outcome.winners || []).map((s) => s ?? 0);
      const scores = outcome.scores || [];
      const status = this.view.match.status;
      return h("div", { class: "outcome", id: "outcome", dataset: { winners: winners.join(",") } },
        status === "MATCH_STATUS_ABANDONED" ? "The match was abandoned. " : "Match over. ",
        winners.length ? `Winner${winners.length > 1 ? "s" : ""}: ${winners.map((s) => ctx.name(s)).join(" and ")}.` : "No winner.",
        scores.length ? h("div", { class: "small" }, `Scores (${game?.scoreUnit || "points"}): `,
          scores.map((v, s) => `${ctx.name(s)} ${v}`).join(" · ")) : null);
    }

    actionsPanel(ctx, game, actions, awaiting) {
      const panel = h("div", { class: "panel actions", id: "actions" });
      if (!actions.length) {
        const who = awaiting.map((s) => ctx.name(s)).join(", ");
        panel.append(h("p", { class: "muted" }, who ? `Waiting for ${who}.` : "Nothing to do right now."));
        return panel;
      }
      panel.append(h("h2", {}, "Your move"));
      const groups = new Map();
      const shown = new Set();
      actions.forEach((action, index) => {
        const a = action[game.field] || {};
        const { group, label } = game.action(a, ctx);
        // Two copies of a card make two legal actions that read the same: offer one.
        if (shown.has(`${group}\n${label}`)) return;
        shown.add(`${group}\n${label}`);
        if (!groups.has(group)) groups.set(group, []);
        groups.get(group).push(h("button", {
          class: "action", type: "button", disabled: this.busy, dataset: { index, group },
          onclick: () => this.act(action),
        }, label));
      });
      for (const [group, buttons] of groups) {
        // A long list (every rule change a Lopti proposal may make) stays folded until asked
        // for, unless it is all there is to choose from.
        if (buttons.length > 12 && groups.size > 1) {
          buttons.forEach((b) => b.classList.add("folded"));
          panel.append(h("details", { class: "group" }, h("summary", {}, `${group || "More"} (${buttons.length} choices)`), buttons));
        } else {
          panel.append(h("div", { class: "group" }, group ? h("span", { class: "label" }, group) : null, buttons));
        }
      }
      if (game.extraActions) {
        const extra = game.extraActions(ctx, actions, (action) => this.act(action));
        if (extra) panel.append(extra);
      }
      return panel;
    }

    logPanel(ctx, game) {
      const items = this.entries.slice(-200).map((e) => h("li", { value: num(e.seq) }, describeEntry(e, ctx, game)));
      const box = h("div", { class: "panel" }, h("h2", {}, "What happened"),
        h("div", { class: "log", id: "log" }, items.length ? h("ol", {}, items) : h("p", { class: "muted" }, "Nothing yet.")));
      requestAnimationFrame(() => { const l = document.getElementById("log"); if (l) l.scrollTop = l.scrollHeight; });
      return box;
    }

    auditPanel(ctx, game) {
      const audit = this.history.audit;
      const events = audit.events || [];
      const panel = h("div", { class: "panel", id: "audit" }, h("h2", {}, "History and audit"));
      const commitment = audit.seedCommitment || this.view.match.seedCommitment;
      const seedCheck = h("span", { id: "seed-check", class: "muted" }, "checking…");
      // The history as the server serves it, saved under the name the command reads (the API
      // tests run this command, as printed, on the file this link downloads).
      const auditUrl = `/v1/matches/${this.id}/history`;
      const auditFile = `${this.id}.json`;
      const verifyCommand = `missive verify ${auditFile}`;
      const head = audit.head;
      panel.append(
        h("p", {}, "Seed commitment (published at creation): ", h("span", { class: "mono", id: "seed-commitment" }, commitment)),
        h("p", {}, "Revealed seed: ", h("span", { class: "mono", id: "seed" }, audit.seed || "(none)"), " ", seedCheck),
        h("p", {}, `Rules version ${audit.rulesVersion ?? 0}. `, chainCheck(events)),
        head ? h("p", { id: "audit-head" }, `Head: the log ends at event ${num(head.version)}, hash `,
          h("span", { class: "mono" }, (head.hash || "").slice(0, 16) + "…"), head.keyId ? `, signed by key ${head.keyId}.` : ".") : null,
        h("p", {}, h("a", { href: auditUrl, download: auditFile, id: "audit-download" }, `Download the history (${auditFile})`),
          h("span", { class: "muted small" }, ", then replay every action and shuffle with "), h("code", { id: "verify-command" }, verifyCommand)));
      sha256Hex(audit.seed).then((digest) => {
        if (digest === null) { seedCheck.textContent = "(this page cannot hash here: not a secure context)"; return; }
        const ok = digest === commitment;
        seedCheck.textContent = ok ? "✔ SHA-256 of the seed matches the commitment" : "✘ does not match the commitment";
        seedCheck.className = ok ? "ok" : "bad";
      });

      // Step through the log, one event at a time.
      if (this.step === null) this.step = events.length - 1;
      const step = Math.max(0, Math.min(this.step, events.length - 1));
      const ev = events[step];
      const seq = ev ? num(ev.seq) : 0;
      const go = (n) => { this.step = Math.max(0, Math.min(n, events.length - 1)); this.render(); };
      const seen = this.entries.filter((e) => num(e.seq) === seq);
      panel.append(
        h("div", { class: "row" },
          h("button", { class: "secondary", type: "button", id: "step-first", onclick: () => go(0) }, "⏮"),
          h("button", { class: "secondary", type: "button", id: "step-prev", onclick: () => go(step - 1) }, "◀ previous"),
          h("span", { id: "step" }, `event ${seq} of ${events.length}`),
          h("button", { class: "secondary", type: "button", id: "step-next", onclick: () => go(step + 1) }, "next ▶"),
          h("button", { class: "secondary", type: "button", id: "step-last", onclick: () => go(events.length - 1) }, "⏭")),
        ev ? h("div", { class: "notice" },
          h("b", {}, auditSummary(ev, ctx, game)),
          seen.length ? h("ul", {}, seen.map((e) => h("li", {}, describeEntry(e, ctx, game)))) : null,
          h("div", { class: "small" }, "prev hash ", h("span", { class: "mono" }, ev.prevHash || ""), h("br"), "hash ", h("span", { class: "mono" }, ev.hash || ""))) : null,
        h("details", {}, h("summary", {}, "The whole hash chain"),
          h("table", { class: "audit" },
            h("tr", {}, h("th", {}, "seq"), h("th", {}, "kind"), h("th", {}, "seat"), h("th", {}, "what"), h("th", {}, "hash")),
            events.map((e, i) => h("tr", { class: i === step ? "current" : "" },
              h("td", {}, num(e.seq)), h("td", {}, e.kind), h("td", {}, e.actor === undefined ? "" : ctx.name(e.actor)),
              h("td", {}, auditSummary(e, ctx, game)), h("td", { class: "mono" }, (e.hash || "").slice(0, 16) + "…"))))));
      return panel;
    }
  }

  function chainCheck(events) {
    let ok = events.length > 0;
    for (let i = 1; i < events.length; i++) if (events[i].prevHash !== events[i - 1].hash) ok = false;
    for (let i = 0; i < events.length; i++) if (num(events[i].seq) !== i + 1) ok = false;
    return h("span", { id: "chain-check", class: ok ? "ok" : "bad" },
      ok ? `✔ ${events.length} events, numbered without gaps, each linked to the previous one's hash.` : "✘ the hash chain is broken.");
  }

  async function sha256Hex(hex) {
    if (!hex || !(window.crypto && crypto.subtle)) return null;
    const bytes = new Uint8Array(hex.match(/../g).map((b) => parseInt(b, 16)));
    const digest = await crypto.subtle.digest("SHA-256", bytes);
    return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function statusText(status) {
    return {
      MATCH_STATUS_OPEN: "waiting for players",
      MATCH_STATUS_ACTIVE: "in play",
      MATCH_STATUS_FINISHED: "finished",
      MATCH_STATUS_ABANDONED: "abandoned",
    }[status] || present(status) || "";
  }

  function duration(secs) {
    secs = num(secs);
    if (secs % 86400 === 0) return `${secs / 86400} d`;
    if (secs % 3600 === 0) return `${secs / 3600} h`;
    if (secs % 60 === 0) return `${secs / 60} min`;
    return `${secs} s`;
  }

  function describeEntry(e, ctx, game) {
    if (e.created) return `Match created for ${e.created.seatCount ?? 0} seats${(e.created.bots || []).length ? `, ${(e.created.bots || []).length} of them bots` : ""}.`;
    if (e.joined) return `${e.joined.player} took seat ${e.joined.seat ?? 0}.`;
    if (e.left) return `${ctx.name(e.left.seat ?? 0)} left.`;
    if (e.timedOut) {
      const a = e.timedOut.action?.[game?.field];
      return `${ctx.name(e.timedOut.seat ?? 0)} ran out of time${a && game ? `: ${game.action(a, ctx).label}` : ""}.`;
    }
    if (e.game && game) return game.event(e.game[game.field] || {}, ctx);
    if (e.closed) {
      return {
        CLOSE_REASON_CANCELLED: "Its creator cancelled the match before it started.",
        CLOSE_REASON_EXPIRED: "The match expired: nobody joined it in time.",
      }[e.closed.reason] || "The match was closed before it started.";
    }
    return raw(e);
  }

  function auditSummary(e, ctx, game) {
    if (e.created) return "created";
    if (e.joined) return `${e.joined.player} joined seat ${e.joined.seat ?? 0} (nonce ${e.joined.nonce || "—"})`;
    if (e.left) return `seat ${e.left.seat ?? 0} left`;
    if (e.action) {
      const a = e.action.action?.[game?.field] || {};
      const { group, label } = game.action(a, ctx);
      return `${ctx.name(e.action.seat ?? 0)}: ${group ? group + " " : ""}${label}`;
    }
    if (e.timedOut) return `seat ${e.timedOut.seat ?? 0} timed out`;
    return e.kind;
  }

  // The games' cards and their texts, once, before the first page: a page without them still
  // works, showing cards by their ids.
  api("GET", "/v1/games").then((res) => useCatalogue(res.games)).catch(() => {}).finally(route);
})();
