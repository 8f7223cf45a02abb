# A small stand-in for nixpkgs' `lib`, for `make test` where no nixpkgs exists (CI has none).
#
# It is enough to evaluate nix/module.nix and it keeps what matters for a test that can fail:
# every value set under services.hearth is checked against its option's type (str, bool, enum,
# ints.between, listOf, attrsOf, nullOr, submodule, path, package), an option that does not exist
# is an error, a required option left unset is an error, and mkIf/mkMerge/mkDefault resolve as in
# NixOS. It does not do priorities, definition merging across modules or option docs rendering;
# the real module system runs in /work/shared/tools/nix-eval (nix flake check, NixOS 24.11).
let
  inherit (builtins) all attrNames concatStringsSep elem foldl' genList isAttrs isBool isFunction
    isInt isList isPath isString length mapAttrs substring stringLength toJSON typeOf;

  show = v: if isAttrs v || isList v then typeOf v else toJSON v;
  mkType = name: check: {
    _type = "type";
    inherit name check;
    merge = path: v: if check v then v
      else throw "The option `${path}' has a value of the wrong type: ${show v} is not ${name}.";
  };
  hasPrefix = p: s: substring 0 (stringLength p) s == p;
  isDrv = v: isAttrs v && v ? type && v.type == "derivation";

  # The options of a submodule for one name, whether written as a function or an attrset.
  subOptions = m: name: (if isFunction m then m { inherit name; config = { }; } else m).options;

  checkOptions = path: opts: value:
    let
      unknown = builtins.filter (n: !(opts ? ${n})) (attrNames value);
      one = n: let p = "${path}.${n}"; o = opts.${n}; in
        if isAttrs o && o ? _type && o._type == "option" then
          (if value ? ${n} then o.type.merge p value.${n}
           else if o ? default then o.default
           else throw "The option `${p}' is used but not defined.")
        else checkOptions p o (value.${n} or { });
    in
    if !isAttrs value then throw "The option `${path}' is not an attribute set: ${show value}."
    else if unknown != [ ] then throw "The option `${path}.${builtins.head unknown}' does not exist."
    else mapAttrs (n: _: one n) opts;

  types = rec {
    str = mkType "string" isString;
    lines = str;
    bool = mkType "boolean" isBool;
    int = mkType "signed integer" isInt;
    path = mkType "path" (v: isPath v || (isString v && hasPrefix "/" v));
    package = mkType "package" (v: isDrv v || (isString v && hasPrefix "/" v));
    enum = values: mkType "one of ${concatStringsSep ", " (map toJSON values)}" (v: elem v values);
    ints = {
      between = lo: hi: mkType "integer between ${toString lo} and ${toString hi} (both inclusive)"
        (v: isInt v && v >= lo && v <= hi);
      positive = mkType "positive integer, meaning >0" (v: isInt v && v > 0);
      unsigned = mkType "unsigned integer, meaning >=0" (v: isInt v && v >= 0);
    };
    oneOf = ts: mkType (concatStringsSep " or " (map (t: t.name) ts)) (v: builtins.any (t: t.check v) ts);
    strMatching = re: mkType "string matching ${re}" (v: isString v && builtins.match re v != null);
    either = a: b: mkType "${a.name} or ${b.name}" (v: a.check v || b.check v);
    nullOr = t: (mkType "null or ${t.name}" (v: v == null || t.check v)) // {
      merge = p: v: if v == null then null else t.merge p v;
    };
    listOf = t: (mkType "list of ${t.name}" (v: isList v && all t.check v)) // {
      merge = p: v: if !isList v then throw "The option `${p}' has a value of the wrong type: ${show v} is not list of ${t.name}."
        else genList (i: t.merge "${p}.[${toString i}]" (builtins.elemAt v i)) (length v);
    };
    attrsOf = t: (mkType "attribute set of ${t.name}" isAttrs) // {
      merge = p: v: if !isAttrs v then throw "The option `${p}' has a value of the wrong type: ${show v} is not attribute set of ${t.name}."
        else mapAttrs (n: x: t.merge "${p}.${n}" x) v;
    } // (if t ? options then { inherit (t) options; } else { });
    submodule = m: (mkType "submodule" isAttrs) // {
      merge = p: v: checkOptions p (subOptions m (baseName p)) v;
      options = name: subOptions m name;
    };
  };
  baseName = p: let parts = builtins.filter isString (builtins.split "\\." p); in builtins.elemAt parts (length parts - 1);

  # Definitions: mkIf / mkMerge / mkDefault resolved into plain values.
  recursiveUnion = a: b: a // mapAttrs (n: vb:
    let va = a.${n}; in
    if !(a ? ${n}) then vb
    else if isList va && isList vb then va ++ vb
    else if isAttrs va && isAttrs vb && !isDrv va then recursiveUnion va vb
    else throw "conflicting definitions of `${n}'") b;
  resolve = v:
    if isAttrs v && v ? _type then
      (if v._type == "if" then (if v.condition then resolve v.content else { })
       else if v._type == "merge" then foldl' recursiveUnion { } (map resolve v.contents)
       else if v._type == "override" then resolve v.content
       else v)
    else if isAttrs v && !isDrv v then mapAttrs (_: resolve) v
    else v;
in
{
  inherit types checkOptions resolve hasPrefix;
  mkOption = attrs: attrs // { _type = "option"; };
  # as nixpkgs' (24.11): the package at pkgs.<name>, documented as such
  mkPackageOption = pkgs: name: { example ? null, extraDescription ? "", ... }: {
    _type = "option"; type = types.package; default = pkgs.${name};
    defaultText = { _type = "literalExpression"; text = "pkgs.${name}"; };
    description = "The ${name} package to use. ${extraDescription}";
  } // (if example == null then { } else { example = { _type = "literalExpression"; text = example; }; });
  mkEnableOption = name: {
    _type = "option"; type = types.bool; default = false; example = true;
    description = "Whether to enable ${name}.";
  };
  mkIf = condition: content: { _type = "if"; inherit condition content; };
  mkMerge = contents: { _type = "merge"; inherit contents; };
  mkDefault = content: { _type = "override"; priority = 1000; inherit content; };
  literalExpression = text: { _type = "literalExpression"; inherit text; };
  optional = cond: v: if cond then [ v ] else [ ];
  concatStringsSep = builtins.concatStringsSep;
  mapAttrs = builtins.mapAttrs;
  filterAttrs = f: set: builtins.listToAttrs (map (n: { name = n; value = set.${n}; })
    (builtins.filter (n: f n set.${n}) (attrNames set)));
  mapAttrsToList = f: set: map (n: f n set.${n}) (attrNames set);
  concatMapAttrs = f: set: foldl' (acc: n: acc // f n set.${n}) { } (attrNames set);
  hasInfix = infix: s: builtins.match ".*${builtins.replaceStrings [ "." ] [ "\\." ] infix}.*" s != null;
}
