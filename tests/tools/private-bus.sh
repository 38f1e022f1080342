# shellcheck shell=bash
# A private system bus configured like Debian's, with a steerd bus policy,
# for the tests and the soak (sourced). write_bus_conf DIR POLICY writes
# DIR/bus.conf listening on DIR/bus/system_bus_socket (sets SOCKET);
# POLICY is the bus policy file to include (units/org.steerd1.conf), or ""
# for a generated one (only root owns org.steerd1, everyone may call it).
# start_private_bus DIR POLICY: writes it, starts dbus-daemon (BUS_PID,
# its log in DIR/bus.log), waits for the socket and exports
# DBUS_SYSTEM_BUS_ADDRESS; 1 when the bus did not come up.

write_bus_conf() {
        local dir=$1 policy
        if [ -n "$2" ]; then
                policy="<include>$2</include>"
        else
                policy='<policy user="root"><allow own="org.steerd1"/><allow send_destination="org.steerd1"/></policy>
  <policy context="default"><allow send_destination="org.steerd1"/></policy>'
        fi
        mkdir -p "$dir/bus"
        chmod 755 "$dir/bus"
        SOCKET=$dir/bus/system_bus_socket
        cat >"$dir/bus.conf" <<EOB
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$SOCKET</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
    <deny send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus" send_member="UpdateActivationEnvironment"/>
  </policy>
  <policy user="root">
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Monitoring"/>
  </policy>
  $policy
</busconfig>
EOB
}

start_private_bus() {
        write_bus_conf "$1" "$2"
        dbus-daemon --config-file="$1/bus.conf" --nofork --nopidfile >>"$1/bus.log" 2>&1 &
        BUS_PID=$!
        for _ in $(seq 100); do [ -S "$SOCKET" ] && break; sleep 0.05; done
        [ -S "$SOCKET" ] || return 1
        export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$SOCKET
}
