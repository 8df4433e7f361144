'''logind stand-in for qosjail's tests: python3-dbusmock's logind template, with
Inhibit() and ListInhibitors() as real logind has them.

The stock template records every inhibitor as uid 1000 pid 123456 and never says that
BlockInhibited changed.  Here, as in systemd-logind, an inhibitor belongs to the caller
(its uid and pid as the bus daemon knows them), lives while the caller keeps the
returned fd open, and every change of the block inhibitors emits PropertiesChanged with
the new BlockInhibited.  SetListError(NAME) makes ListInhibitors fail with that D-Bus
error ('' lifts it), for the bridge's fail-closed case.
'''
# SPDX-License-Identifier: LGPL-2.1-or-later

import os

import dbus
import dbus.service
from dbusmock import MOCK_IFACE, mockobject
from dbusmock.templates import logind as stock
from gi.repository import GLib

BUS_NAME = stock.BUS_NAME
MAIN_OBJ = stock.MAIN_OBJ
MAIN_IFACE = stock.MAIN_IFACE
SYSTEM_BUS = True

ListUsers = stock.ListUsers
ListSessions = stock.ListSessions

inhibitors = []
list_error = ['']


def load(mock, parameters):
    stock.load(mock, parameters)
    mock.AddProperties(MAIN_IFACE, dbus.Dictionary({
        'BlockInhibited': '', 'DelayInhibited': ''}, signature='sv'))


def _what(mode):
    whats = []
    for i in inhibitors:
        if i[3] == mode:
            for w in i[0].split(':'):
                if w not in whats:
                    whats.append(w)
    return ':'.join(whats)


def _changed():
    obj = mockobject.objects[MAIN_OBJ]
    obj.UpdateProperties(MAIN_IFACE, {'BlockInhibited': _what('block'),
                                      'DelayInhibited': _what('delay')})


@dbus.service.method(MAIN_IFACE, in_signature='ssss', out_signature='h',
                     sender_keyword='sender')
def Inhibit(self, what, who, why, mode, sender=None):
    bus = self.connection
    dbus_obj = bus.get_object('org.freedesktop.DBus', '/org/freedesktop/DBus')
    uid = int(dbus_obj.GetConnectionUnixUser(sender, dbus_interface='org.freedesktop.DBus'))
    pid = int(dbus_obj.GetConnectionUnixProcessID(sender,
                                                  dbus_interface='org.freedesktop.DBus'))
    fd_r, fd_w = os.pipe()
    inhibitor = (str(what), str(who), str(why), str(mode), dbus.UInt32(uid), dbus.UInt32(pid))
    inhibitors.append(inhibitor)

    def dropped(fd, cond):
        # pylint: disable=unused-argument
        os.close(fd)
        inhibitors.remove(inhibitor)
        _changed()
        return False

    GLib.unix_fd_add_full(GLib.PRIORITY_HIGH, fd_r, GLib.IO_HUP, dropped)
    GLib.idle_add(os.close, fd_w)
    _changed()
    return fd_w


@dbus.service.method(MAIN_IFACE, in_signature='', out_signature='a(ssssuu)')
def ListInhibitors(self):
    # pylint: disable=unused-argument
    if list_error[0]:
        raise dbus.exceptions.DBusException('ListInhibitors fails (test)', name=list_error[0])
    return dbus.Array(inhibitors, signature='(ssssuu)')


@dbus.service.method(MOCK_IFACE, in_signature='s', out_signature='')
def SetListError(self, name):
    # pylint: disable=unused-argument
    list_error[0] = str(name)
    _changed()
