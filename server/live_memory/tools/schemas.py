"""The tool definitions the model sees, in the Anthropic Messages shape ({name, description,
input_schema}). They sit in the provider's cached prompt prefix, so they are literal, byte-stable text:
never built from anything that varies per workspace, configuration or run.

Names and core parameters follow Claude Code's Read/Grep/Glob so a model trained on them is at home;
deliberate divergences (see DESIGN.md "Tool schema design"): workspace-relative paths, case-insensitive
Grep by default, a Glob limit, three bespoke explorers standing in for find / git status / git log, and
find_symbol (definitions and uses from the workspace's file cards).
"""

from __future__ import annotations

from typing import Any

__all__ = ["TOOL_SCHEMAS"]

_READ: dict[str, Any] = {
    "name": "Read",
    "description": (
        "Read a text file from the workspace. file_path is relative to the workspace root "
        '(e.g. "src/app.py"). Returns up to 2000 lines, each after its number and a tab; for longer files pass '
        "offset (1-based start line) and limit. Lines over 2000 characters are cut. Binary files and "
        "secret files (.env, keys, credentials) cannot be read."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "Workspace-relative path of the file to read"},
            "offset": {"type": "integer", "description": "Line number to start reading from (1-based)"},
            "limit": {"type": "integer", "description": "Number of lines to read (default 2000)"},
        },
        "required": ["file_path"],
    },
}

_GREP: dict[str, Any] = {
    "name": "Grep",
    "description": (
        "Search file contents with a regular expression (ripgrep syntax), honouring .gitignore. "
        'Case-insensitive unless -i is false. output_mode: "files_with_matches" (default) lists '
        'matching files; "content" shows matching lines as path:line:text; "count" shows matching '
        'lines per file. Filter files with glob (e.g. "*.py", "src/**/*.{ts,tsx}") or path. Results '
        "are sorted by path and capped by head_limit (default 200)."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression to search for"},
            "path": {
                "type": "string",
                "description": "File or directory to search, relative to the workspace root (default: all)",
            },
            "glob": {"type": "string", "description": 'Only search files matching this glob, e.g. "*.js"'},
            "output_mode": {
                "type": "string",
                "enum": ["files_with_matches", "content", "count"],
                "description": 'What to show (default "files_with_matches")',
            },
            "-i": {"type": "boolean", "description": "Case-insensitive search (default true)"},
            "head_limit": {"type": "integer", "description": "Show only the first N entries (default 200)"},
        },
        "required": ["pattern"],
    },
}

_GLOB: dict[str, Any] = {
    "name": "Glob",
    "description": (
        'Find files by glob pattern, e.g. "**/*.py" or "src/**/*.{ts,tsx}". A pattern without "/" '
        "matches file names at any depth. Honours .gitignore. Returns workspace-relative paths sorted "
        "by path, at most limit (default 200)."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Glob pattern to match files against"},
            "path": {
                "type": "string",
                "description": "Directory to search in, relative to the workspace root (default: the root)",
            },
            "limit": {"type": "integer", "description": "Maximum number of paths to return (default 200)"},
        },
        "required": ["pattern"],
    },
}

_FIND_PATHS: dict[str, Any] = {
    "name": "find_paths",
    "description": (
        "List files and directories like `find`: filter by name (a glob on the base name, "
        'case-insensitive), type ("f" files, "d" directories) and max_depth (1 = direct children of '
        'path). Honours .gitignore. Directories end in "/" and show their file count.'
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": 'Base-name glob, e.g. "*.md" or "test_*"'},
            "type": {
                "type": "string",
                "enum": ["f", "d"],
                "description": "f: files only; d: directories only",
            },
            "max_depth": {"type": "integer", "description": "Maximum depth below path (1 = direct children)"},
            "path": {
                "type": "string",
                "description": "Directory to start from, relative to the workspace root (default: the root)",
            },
            "limit": {"type": "integer", "description": "Maximum number of paths to return (default 200)"},
        },
    },
}

_CHANGED: dict[str, Any] = {
    "name": "get_changed_files",
    "description": (
        "Show the working tree's uncommitted changes (git status): staged, unstaged and untracked "
        "files with their status codes, and the current branch."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Only report changes under this file or directory"},
        },
    },
}

_GIT_SEARCH: dict[str, Any] = {
    "name": "git_search",
    "description": (
        "Search git history (git log), newest first: why and when code changed. query matches commit "
        "messages (case-insensitive regex); path keeps commits touching that file or directory "
        "(following renames for a file); include_patch adds each commit's diff. Shows hash, date, "
        "author, message and changed files for up to max_count commits (default 10, max 50)."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Regex matched against commit messages"},
            "path": {"type": "string", "description": "Only commits touching this workspace-relative path"},
            "include_patch": {"type": "boolean", "description": "Include each commit's diff (default false)"},
            "max_count": {"type": "integer", "description": "Maximum number of commits (default 10)"},
        },
    },
}

# -- find_symbol (tools/symbols.py) -----------------------------------------------------------------
_FIND_SYMBOL: dict[str, Any] = {
    "name": "find_symbol",
    "description": (
        "Find where a name is defined and which files use it: a class, function, method, type, constant "
        "or Markdown heading (its title, or a word of it no code defines), bare "
        '("render") or qualified ("Card.render"). Shows each definition as '
        "path:start-end with its signature (Read that range) and the files referencing the name, at most "
        '6 definitions and 30 files. kind: "definition", "uses" or "both" (default). code: true also shows '
        "the lines of a name's one or two short definitions: no Read needed."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Symbol name, bare or qualified (Class.method)"},
            "kind": {
                "type": "string",
                "enum": ["definition", "uses", "both"],
                "description": 'What to show (default "both")',
            },
            "code": {"type": "boolean", "description": "Also show the lines of short definitions (default false)"},
        },
        "required": ["name"],
    },
}

TOOL_SCHEMAS: tuple[dict[str, Any], ...] = (
    _READ,
    _GREP,
    _GLOB,
    _FIND_PATHS,
    _CHANGED,
    _GIT_SEARCH,
    _FIND_SYMBOL,
)
