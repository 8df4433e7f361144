'''logind stand-in for qosjail's tests: python3-dbusmock's logind template, with
Inhibit() and ListInhibitors() as real logind has them.

The stock template records every inhibitor as uid 1000 pid 123456 and never says that
BlockInhibited changed.  Here, as in systemd-logind, an inhibitor belongs to the caller
(its uid and pid as the bus daemon knows them), lives while the caller keeps the
returned fd open, and every change of the block inhibitors emits PropertiesChanged with
the new BlockInhibited.  SetListError(NAME) makes ListInhibitors fail with that D-Bus
error ('' lifts it), for the bridge's fail-closed case.

Sessions as logind has them for the idle-hint bridge: AddIdleSession(ID, UID, USER, SEAT,
TYPE, LEADER) adds an active local session of class user; its SetIdleHint is logind's
(only root or the session's owner, as the bus daemon knows the caller, and only on a
graphical session; IdleHint changes emit PropertiesChanged), SetSessionActive(ID, B)
switches it, RemoveIdleSession(ID) ends it, and SetSessionGarbage(B) makes GetAll answer
IdleHint as a string, a reply the bridge cannot read.
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
SESSION_IFACE = 'org.freedesktop.login1.Session'
PROPS_IFACE = 'org.freedesktop.DBus.Properties'
GRAPHICAL = ('x11', 'wayland', 'mir')

inhibitors = []
list_error = ['']
sessions = {}
garbage = [False]


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


class Session(dbus.service.Object):
    '''One session object, with logind's SetIdleHint and its properties.'''

    def __init__(self, conn, path, props):
        super().__init__(conn, path)
        # dbusmock's method lookup reads obj.methods first (a KeyError falls back).
        self.methods = {}
        self.interface = SESSION_IFACE
        self.path = path
        self.props = props

    def changed(self, changed):
        self.props.update(changed)
        self.PropertiesChanged(SESSION_IFACE, changed, dbus.Array([], signature='s'))

    @dbus.service.signal(PROPS_IFACE, signature='sa{sv}as')
    def PropertiesChanged(self, iface, changed, invalidated):
        # pylint: disable=unused-argument,invalid-name
        pass

    @dbus.service.method(PROPS_IFACE, in_signature='s', out_signature='a{sv}')
    def GetAll(self, iface):
        # pylint: disable=invalid-name
        if iface != SESSION_IFACE:
            return dbus.Dictionary({}, signature='sv')
        props = dict(self.props)
        if garbage[0]:
            props['IdleHint'] = dbus.String('maybe')
        return dbus.Dictionary(props, signature='sv')

    @dbus.service.method(PROPS_IFACE, in_signature='ss', out_signature='v')
    def Get(self, iface, name):
        # pylint: disable=invalid-name,unused-argument
        return self.props[name]

    @dbus.service.method(SESSION_IFACE, in_signature='b', out_signature='',
                         sender_keyword='sender')
    def SetIdleHint(self, idle, sender=None):
        # pylint: disable=invalid-name
        driver = self.connection.get_object('org.freedesktop.DBus', '/org/freedesktop/DBus')
        uid = int(driver.GetConnectionUnixUser(sender, dbus_interface='org.freedesktop.DBus'))
        if uid not in (0, int(self.props['User'][0])):
            raise dbus.exceptions.DBusException('Only owner of session may set idle hint',
                                                name='org.freedesktop.DBus.Error.AccessDenied')
        if self.props['Type'] not in GRAPHICAL:
            raise dbus.exceptions.DBusException(
                'Idle hint control is not supported on non-graphical sessions.',
                name='org.freedesktop.DBus.Error.NotSupported')
        if bool(idle) != bool(self.props['IdleHint']):
            self.changed({'IdleHint': dbus.Boolean(idle)})


@dbus.service.method(MAIN_IFACE, in_signature='', out_signature='a(susso)')
def ListSessions(self):
    # pylint: disable=unused-argument
    return dbus.Array([(sid, s.props['User'][0], s.props['Name'], s.props['Seat'][0],
                        s.path) for sid, s in sessions.items()], signature='(susso)')


@dbus.service.method(MOCK_IFACE, in_signature='suss' + 'su', out_signature='o')
def AddIdleSession(self, sid, uid, user, seat, stype, leader):
    # pylint: disable=too-many-arguments
    path = dbus.ObjectPath('/org/freedesktop/login1/session/' + sid)
    props = {'Id': dbus.String(sid), 'Name': dbus.String(user),
             'User': dbus.Struct((dbus.UInt32(uid), dbus.ObjectPath(
                 f'/org/freedesktop/login1/user/_{uid}')), signature='uo'),
             'Seat': dbus.Struct((dbus.String(seat), dbus.ObjectPath(
                 '/org/freedesktop/login1/seat/' + (seat or 'none'))), signature='so'),
             'Type': dbus.String(stype), 'Class': dbus.String('user'),
             'Active': dbus.Boolean(True), 'Remote': dbus.Boolean(False),
             'State': dbus.String('active'), 'IdleHint': dbus.Boolean(False),
             'Leader': dbus.UInt32(leader)}
    sessions[str(sid)] = Session(self.connection, path, props)
    self.EmitSignal(MAIN_IFACE, 'SessionNew', 'so', [sid, path])
    return path


@dbus.service.method(MOCK_IFACE, in_signature='sb', out_signature='')
def SetSessionActive(self, sid, active):
    # pylint: disable=unused-argument
    sessions[str(sid)].changed({'Active': dbus.Boolean(active),
                                'State': dbus.String('active' if active else 'online')})


@dbus.service.method(MOCK_IFACE, in_signature='s', out_signature='')
def RemoveIdleSession(self, sid):
    s = sessions.pop(str(sid))
    s.remove_from_connection()
    self.EmitSignal(MAIN_IFACE, 'SessionRemoved', 'so', [sid, s.path])


@dbus.service.method(MOCK_IFACE, in_signature='b', out_signature='')
def SetSessionGarbage(self, on):
    # pylint: disable=unused-argument
    garbage[0] = bool(on)
    for s in sessions.values():
        s.changed({'State': s.props['State']})
