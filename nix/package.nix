# hearth as a Python application, built from pyproject.toml; the test suite runs in the build.
# `commit` (the flake passes its revision) is what `hearth --version` prints beside the version.
{ lib, python3Packages, bubblewrap, git, openssl, installShellFiles, commit ? null }:
let
  py = python3Packages;
  project = (builtins.fromTOML (builtins.readFile ../pyproject.toml)).project;

  # ddgs (the web search library) is not in nixpkgs 24.11; later nixpkgs has it. 9.5.5 is the
  # newest release whose pyproject still builds with 24.11's setuptools (9.6+ use a PEP 639
  # license string that setuptools < 77 rejects).
  ddgs = py.ddgs or (py.buildPythonPackage rec {
    pname = "ddgs";
    version = "9.5.5";
    pyproject = true;
    src = py.fetchPypi {
      inherit pname version;
      hash = "sha256-mgmqm6JBc9FDIRN8jBvFQEDtC/O62VbLL5/u2neWh3A=";
    };
    build-system = [ py.setuptools ];
    dependencies = [ py.click py.primp py.lxml ];
    # 24.11 ships older primp and lxml than ddgs asks for; the search code hearth uses runs on them
    pythonRelaxDeps = [ "primp" "lxml" "click" ];
    doCheck = false; # its tests query live search engines
    pythonImportsCheck = [ "ddgs" ];
  });
in
py.buildPythonApplication {
  pname = project.name;
  inherit (project) version;
  pyproject = true;

  # only what the build and its tests read (not .venv, .git or a local state dir); lib.fileset
  # would be neater but cannot take a flake's store path as its root under Nix 2.8
  src = lib.cleanSourceWith {
    name = "hearth-source";
    src = ../.;
    filter = path: type:
      let rel = lib.removePrefix (toString ../. + "/") (toString path); top = builtins.head (lib.splitString "/" rel); in
      (builtins.elem top [ "pyproject.toml" "README.md" "docs" "agent" "hearth" "tests" ]
        # the units' one source: hearth/install/units.toml is a link to it (hearth install --systemd)
        || rel == "nix" || rel == "nix/units.toml")
      && !(lib.hasSuffix ".pyc" rel) && builtins.baseNameOf rel != "__pycache__";
  };

  postPatch = lib.optionalString (commit != null) ''
    echo 'COMMIT = "${commit}"' > hearth/_commit.py
  '';

  build-system = [ py.setuptools ];
  nativeBuildInputs = [ installShellFiles ];
  dependencies = [ py.httpx py.pydantic py.watchdog py.sqlite-utils py.trafilatura py.lxml-html-clean py.regex ddgs ]
    # the command center (hearth serve)
    ++ [ py.fastapi py.uvicorn py.jinja2 py.python-multipart py.prometheus-client ]
    # semantic recall's vector search (agent/knowledge/vectors.py), nixpkgs' wheel of sqlite-vec;
    # a nixpkgs without it still builds hearth, whose search is then by text only (hearth doctor says so)
    ++ lib.optional (py ? sqlite-vec) py.sqlite-vec
    # runs on other boxes (hearth/fleet/, pyproject's `fleet` extra, celery[redis]): the hub sends
    # requests through a Redis broker and `hearth worker` takes them
    ++ [ py.celery py.redis ]
    # the Telegram channel (hearth/channels/telegram.py, `hearth channels`)
    ++ [ py.python-telegram-bot ]
    # skills' SKILL.md frontmatter (hearth/skills/skill.py)
    ++ [ py.pyyaml ];
  pythonRemoveDeps = lib.optional (!(py ? sqlite-vec)) "sqlite-vec";
  # the lower bounds in pyproject.toml follow PyPI; 24.11's versions of these pass the suite
  pythonRelaxDeps = [ "sqlite-utils" "trafilatura" "watchdog" "ddgs" "sqlite-vec" ];

  nativeCheckInputs = [ py.pytestCheckHook bubblewrap git openssl ] # openssl: the TLS tests make a certificate
    ++ [ py.openai ]; # the official client drives the /v1 door's tests (tests/hearth/doors/)
  preCheck = ''
    export HOME=$TMPDIR
  '';
  # offline build sandbox: the live tests need the internet or a real Ollama
  pytestFlagsArray = [ "-m" "not live" ];
  disabledTestPaths = [
    # evaluate and lint the NixOS module with nix-instantiate and systemd-analyze, which a Nix
    # build cannot run (no Nix store or daemon inside the build sandbox); `make test` runs them
    "tests/nix/test_module.py"
    "tests/nix/test_units.py"
    "tests/nix/test_web_unit.py"
    # keeps its files in /var/tmp (bwrap hides /tmp), which a Nix build sandbox does not have;
    # `make test` runs it (tests/agent/safety/test_audit_trail.py runs here when the build can nest a sandbox)
    "tests/agent/safety/test_sandbox.py"
  ];

  pythonImportsCheck = [ "agent" "hearth" ];

  # completions and man pages, generated from the parsers by the programs themselves (after the
  # fixup phase has wrapped them with their dependencies)
  postFixup = ''
    export HOME=$TMPDIR
    installShellCompletion --cmd hearth \
      --bash <($out/bin/hearth completion bash) \
      --zsh <($out/bin/hearth completion zsh) \
      --fish <($out/bin/hearth completion fish)
    # bash-completion and fish load a file by the command's name; zsh's #compdef names both
    installShellCompletion --cmd hearth-loop \
      --bash <($out/bin/hearth completion bash) \
      --fish <($out/bin/hearth completion fish)
    $out/bin/hearth man hearth > hearth.1
    $out/bin/hearth man hearth-loop > hearth-loop.1
    installManPage hearth.1 hearth-loop.1
  '';

  meta = {
    description = project.description;
    license = lib.licenses.mit;
    mainProgram = "hearth";
    maintainers = [ ]; # hearth's own team (see the repository); none in nixpkgs' list yet
    platforms = lib.platforms.linux;
  };
}
