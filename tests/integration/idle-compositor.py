#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
'''A compositor's idle hint, for test-logind-idle.c: one system-bus connection kept for the
process's whole life, as a compositor keeps its own.  Each line on stdin, "true" or
"false", is logind's Session.SetIdleHint on the session path in argv[1]; once logind
answered, "ok" or "error NAME" is written on stdout.  Exits at end of input.'''
import sys

import dbus


def main():
    bus = dbus.SystemBus()  # DBUS_SYSTEM_BUS_ADDRESS: the test's private bus
    session = bus.get_object('org.freedesktop.login1', sys.argv[1])
    for line in sys.stdin:
        try:
            session.SetIdleHint(dbus.Boolean(line.strip() == 'true'),
                                dbus_interface='org.freedesktop.login1.Session')
            print('ok', flush=True)
        except dbus.exceptions.DBusException as e:
            print('error', e.get_dbus_name(), flush=True)


if __name__ == '__main__':
    main()
