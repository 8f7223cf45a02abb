# The appliance end to end in a NixOS VM (checks.<system>.vm): a fake Ollama service, a request
# dropped into the queue by a submitter, the run seen in the audit, an invalid request seen in
# rejected/, a schedule's timer enqueueing through the same queue, and the self-test recorded.
{ self }:
{ pkgs, ... }:
let
  fakeOllama = pkgs.writeShellScript "fake-ollama" ''
    export PYTHONPATH=${self}
    exec ${pkgs.python3}/bin/python3 ${self}/nix/fake-ollama.py --port 11434
  '';
  asHearth = cmd: "runuser -u hearth -- ${cmd}";
in
{
  name = "hearth";

  nodes.machine = { ... }: {
    imports = [ self.nixosModules.default ];
    virtualisation.memorySize = 2048;
    users.users.alice.isNormalUser = true;

    systemd.services.fake-ollama = {
      description = "fake Ollama for the hearth VM test";
      wantedBy = [ "multi-user.target" ];
      before = [ "hearth-spawn.path" ];
      serviceConfig = { ExecStart = fakeOllama; DynamicUser = true; };
    };

    services.hearth = {
      enable = true;
      ollama.url = "http://127.0.0.1:11434";
      defaultModel = "qwen2.5-coder";
      submitters = [ "alice" ];
      selfTest.onCalendar = "*-12-31 23:59:00";
      schedules.hello = {
        goal = "write hello.txt (scheduled)";
        onCalendar = "*-12-31 23:59:00";
      };
    };
  };

  testScript = ''
    import json

    machine.wait_for_unit("fake-ollama.service")
    machine.wait_for_open_port(11434)
    machine.wait_for_unit("hearth-spawn.path")

    with subtest("a submitter's request runs and is audited"):
        machine.succeed("su alice -c 'hearth enqueue --goal \"write hello.txt\" --agent-name default --mode auto --source cli'")
        machine.wait_until_succeeds("${asHearth "hearth runs --status done --json"} | grep -q 'write hello.txt\"'", timeout=120)
        runs = json.loads(machine.succeed("${asHearth "hearth runs --json"}"))
        run = next(r for r in runs if r["goal"] == "write hello.txt")
        machine.succeed(f"grep -q 'hello from the VM test' /var/lib/hearth/agents/{run['id']}/hello.txt")

    with subtest("an invalid request lands in rejected/"):
        machine.succeed("su alice -c 'printf %s \"{not json\" > /var/lib/hearth/queue/broken.json'")
        machine.wait_until_succeeds("ls /var/lib/hearth/queue/rejected/ | grep -q broken", timeout=60)

    with subtest("a schedule's timer enqueues through the same queue"):
        machine.succeed("systemctl start hearth-schedule-hello.service")
        machine.wait_until_succeeds("${asHearth "hearth runs --status done --json"} | grep -q '\"source\": \"timer\"'", timeout=120)

    with subtest("the self-test runs as a unit and is recorded"):
        machine.succeed("systemctl start hearth-self-test.service")
        machine.succeed("${asHearth "hearth runs --json"} | grep -q '\"source\": \"self-test\"'")

    with subtest("no run touched another run's workspace or the credential store"):
        machine.fail("systemctl is-failed 'hearth-agent@*'")
  '';
}
