# Evaluates nix/module.nix with the stub lib (./stub-lib.nix), no nixpkgs needed.
#   userConfig  the services.hearth = { ... } a test sets (other top-level keys are ignored)
#   hearthPkg   a directory with bin/hearth and bin/hearth-loop (the test venv)
#   scriptDir   where the test writes the scripts pkgs.writeShellScript would have made
# Returns the resolved config the module sets, the checked services.hearth values, every option
# declaration (for the documentation check), the text of each generated script and the users'
# declaration hearth-users.service applies.
{ userConfig, hearthPkg, scriptDir }:
let
  lib = import ./stub-lib.nix;
  pkgs = {
    writeShellScript = name: _text: "${scriptDir}/${name}";
    writeText = name: _text: "${scriptDir}/${name}";
    callPackage = _: _: throw "the tests always set services.hearth.package";
    bash = "/stub/bash"; coreutils = "/stub/coreutils"; git = "/stub/git"; nix = "/stub/nix";
    bubblewrap = "/stub/bubblewrap"; python3 = "/stub/python3";
  };
  module = import ../../nix/module.nix { inherit config lib pkgs; };
  hearth = lib.checkOptions "services.hearth" module.options.services.hearth
    ({ package = hearthPkg; } // (userConfig.services.hearth or { }));
  config = { services.hearth = hearth; services.ollama = userConfig.services.ollama or { }; };
  units = import ../../nix/units.nix {
    cfg = hearth;
    bin = { hearth = "${hearthPkg}/bin/hearth"; hearthLoop = "${hearthPkg}/bin/hearth-loop"; };
    script = pkgs.writeShellScript;
    text = pkgs.writeText;
  };

  # option path -> which of the documented attributes it carries
  isOption = o: builtins.isAttrs o && o ? _type && o._type == "option";
  describe = path: o:
    if isOption o then
      [ { inherit path; type = o.type.name; hasDefault = o ? default; hasExample = o ? example;
          hasDescription = (o.description or "") != ""; } ]
      ++ (if o.type ? options then describe "${path}.<name>" (o.type.options "<name>") else [ ])
    else builtins.concatLists (map (n: describe "${path}.${n}" o.${n}) (builtins.attrNames o));
in
{
  config = lib.resolve module.config;
  services.hearth = builtins.removeAttrs hearth [ "package" ];
  options = describe "services.hearth" module.options.services.hearth;
  scripts = units.scripts;
  # what hearth-users.service applies (pkgs.writeText's file, at scriptDir/hearth-users.json)
  declaration = units.declarationText;
  meta = module.meta or { };
}
