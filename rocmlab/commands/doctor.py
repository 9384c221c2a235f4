"""rocmlab doctor: check this machine for the course. Exit 1 on any fail."""

from __future__ import annotations


def add_parser(sub):
    p = sub.add_parser("doctor", help="check the environment (ok/warn/fail with fixes)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--env", action="store_true",
                   help="list every ROCMLAB_* variable: its meaning, default and value here")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.env:
        from rocmlab import settings

        if args.json:
            import json
            import os

            print(json.dumps({"variables": [{"name": v.name, "meaning": v.meaning, "default": v.default,
                                             "value": os.environ.get(v.name)} for v in settings.VARIABLES]},
                             indent=2))
        else:
            print(settings.variables_table(with_values=True))
        return 0
    from rocmlab import doctor
    from rocmlab.machine.detect import Probe, detect

    probe = Probe()
    plat = detect(probe)
    checks = doctor.run_checks(probe, plat)
    if args.json:
        print(doctor.to_json(checks, plat, probe))
    else:
        print(f"rocmlab doctor — {plat.summary()}\n")
        print(doctor.format_table(checks))
    return doctor.exit_code(checks)
