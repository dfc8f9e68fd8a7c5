// Live Memory file feed for OpenCode: installed by `live-memory`, removed by its uninstall.
//
// Tees the files OpenCode's read, edit, write and apply_patch tools touch to the service's POST /notify,
// with the event shape of the Claude Code hook (hooks/notify.py): {"cwd", "session_id", "events": [{"path",
// "kind": "read"|"write"|"unlink", "content"?}]}. Content is read from disk (never from the tool's output)
// and capped; a file over the cap, a binary file or a credential file is announced by path only, which the
// server treats as a change. Files outside the project's repository are not sent at all.
//
// OpenCode awaits this hook before its next model request, so a question asked right after an edit sees the
// new text; every tee is bounded by TEE_TIMEOUT_MS and never throws, so a stopped service costs nothing.
// No imports beyond Node's standard modules (OpenCode runs plugins under Bun, which provides them).

import { closeSync, existsSync, openSync, readSync, realpathSync, statSync } from "node:fs"
import path from "node:path"

// Written by the installer: the service's URL and the name of the variable holding its token (never the token).
const INSTALLED_URL = "__LIVE_MEMORY_URL__"
const TOKEN_ENV = null

// Mirrors of hooks/notify.py and hooks/_client.py (tests/agents/test_opencode.py checks them against the package).
const MAX_FILE_BYTES = 262144
const BINARY_SNIFF_BYTES = 8192
const MAX_SESSION_ID_CHARS = 256
// Why 500 ms: OpenCode waits for the tee on every read and edit; a healthy local service answers in tens of ms.
const TEE_TIMEOUT_MS = 500
const READ_TOOLS = ["read"]
const WRITE_TOOLS = ["edit", "write"]
const PATCH_TOOLS = ["apply_patch"]
// Credentials never leave this process: such a file is announced by path only. Matched case-insensitively
// against the file name, like fnmatch.
const SECRET_NAMES = [] // filled in at install from the server's DEFAULT_SECRET_GLOBS (its names)
// apply_patch names each file it touches on one of these lines; a file gone afterwards was deleted or moved.
const PATCH_HEADERS = ["*** Add File: ", "*** Update File: ", "*** Move to: ", "*** Delete File: "]

const SECRET_PATTERNS = SECRET_NAMES.map(
  (glob) => new RegExp("^" + glob.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*") + "$"),
)

function serverUrl() {
  const raw = (process.env.LIVE_MEMORY_URL || INSTALLED_URL).trim().replace(/\/+$/, "")
  return raw.endsWith("/mcp") ? raw.slice(0, -"/mcp".length) : raw
}

function authToken() {
  const names = ["LIVE_MEMORY_AUTH_TOKEN", ...(TOKEN_ENV ? [TOKEN_ENV] : [])]
  for (const name of names) {
    const value = (process.env[name] || "").trim()
    if (value) return value
  }
  return ""
}

// The repository around the project dir (nearest ancestor holding .git), else the project dir.
function workspaceRoot(project) {
  let current = project
  for (;;) {
    if (existsSync(path.join(current, ".git"))) return current
    const parent = path.dirname(current)
    if (parent === current) return project
    current = parent
  }
}

function realOrSelf(file) {
  try {
    return realpathSync(file)
  } catch {
    return file
  }
}

function isInside(file, root) {
  for (const [candidate, base] of [[file, root], [realOrSelf(file), realOrSelf(root)]]) {
    if (candidate === base || candidate.startsWith(base.replace(/\/+$/, "") + path.sep)) return true
  }
  return false
}

function isSecret(file) {
  const name = path.basename(file).toLowerCase()
  return SECRET_PATTERNS.some((pattern) => pattern.test(name))
}

// {content: string|null} for an existing regular file, null when there is nothing to tee.
// Why the stat first: never open a FIFO or device (that could block), never read past the cap.
function readForTee(file) {
  let info
  try {
    info = statSync(file)
  } catch {
    return null
  }
  if (!info.isFile()) return null
  if (info.size > MAX_FILE_BYTES || isSecret(file)) return { content: null }
  let data
  try {
    const fd = openSync(file, "r")
    try {
      const buffer = Buffer.alloc(MAX_FILE_BYTES + 1)
      const length = readSync(fd, buffer, 0, buffer.length, 0)
      data = buffer.subarray(0, length)
    } finally {
      closeSync(fd)
    }
  } catch {
    return { content: null }
  }
  if (data.length > MAX_FILE_BYTES || data.subarray(0, BINARY_SNIFF_BYTES).includes(0)) return { content: null }
  return { content: new TextDecoder("utf-8").decode(data) }
}

// (path, kind) pairs an apply_patch call touched, from its file headers.
function patchedFiles(patchText) {
  const touched = []
  for (const line of String(patchText || "").split(/\r?\n/)) {
    const header = PATCH_HEADERS.find((prefix) => line.startsWith(prefix))
    const raw = header ? line.slice(header.length).trim() : ""
    if (raw) touched.push([raw, "write"])
  }
  return touched
}

function touchedFiles(tool, args) {
  if (!args || typeof args !== "object") return []
  if (READ_TOOLS.includes(tool) && typeof args.filePath === "string") return [[args.filePath, "read"]]
  if (WRITE_TOOLS.includes(tool) && typeof args.filePath === "string") return [[args.filePath, "write"]]
  if (PATCH_TOOLS.includes(tool)) return patchedFiles(args.patchText)
  return []
}

function eventsFor(tool, args, project) {
  const root = workspaceRoot(project)
  const events = []
  for (const [raw, kind] of touchedFiles(tool, args)) {
    if (!raw) continue
    const file = path.resolve(project, raw)
    if (!isInside(file, root)) continue
    if (kind === "write" && !existsSync(file)) {
      events.push({ path: file, kind: "unlink" })
      continue
    }
    const found = readForTee(file)
    if (found === null) continue
    const event = { path: file, kind }
    if (found.content !== null) event.content = found.content
    events.push(event)
  }
  return events
}

async function post(project, sessionID, events) {
  const body = { cwd: project, events }
  if (typeof sessionID === "string" && sessionID) body.session_id = sessionID.slice(0, MAX_SESSION_ID_CHARS)
  const headers = { "Content-Type": "application/json", Accept: "application/json", "User-Agent": "live-memory-opencode" }
  const token = authToken()
  if (token) headers.Authorization = "Bearer " + token
  try {
    const response = await fetch(serverUrl() + "/notify", {
      method: "POST",
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(TEE_TIMEOUT_MS),
    })
    await response.arrayBuffer()
  } catch {
    // refused, timed out, reset: the service is not there; the agent goes on without it
  }
}

export const LiveMemoryFeed = async ({ directory }) => {
  const project = path.resolve(directory || process.cwd())
  return {
    "tool.execute.after": async (input) => {
      try {
        const events = eventsFor(input.tool, input.args, project)
        if (events.length) await post(project, input.sessionID, events)
      } catch {
        // never let the feed break a tool call
      }
    },
  }
}
