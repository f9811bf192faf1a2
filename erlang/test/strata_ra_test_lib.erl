%% Helpers of strata_ra's common_test suites: a data directory per case,
%% Ra-like system configs, owner processes started unlinked, Ra-written
%% meta.dets files, and child BEAMs (strata_ra_child) to kill -9.
-module(strata_ra_test_lib).

-export([init_case/2,
         end_case/1,
         end_suite/0,
         data_dir/1,
         sys_cfg/3,
         start/1,
         start_error/1,
         stop/1,
         owner/1,
         handle/1,
         kill_owner/1,
         await_down/2,
         write_ra_dets/3,
         read_file/1,
         files/1,
         spawn_child/2,
         child_line/3,
         child_lines_until/3,
         kill9/1,
         await_exit/2,
         percentile/2]).

-include_lib("common_test/include/ct.hrl").

%% ---- a data directory per test case ----

%% A fresh directory for the case under a temp dir of this run; removed by
%% end_case/1 when the case passed, kept (and named in the log) otherwise.
init_case(Case, Config) ->
    Dir = filename:join(run_root(), atom_to_list(Case) ++ "-" ++
                            integer_to_list(erlang:unique_integer([positive]))),
    ok = filelib:ensure_path(Dir),
    [{case_dir, Dir} | Config].

end_case(Config) ->
    Dir = ?config(case_dir, Config),
    case ?config(tc_status, Config) of
        ok -> _ = file:del_dir_r(Dir), ok;
        _ -> ct:pal("kept the case's data directory ~ts", [Dir])
    end,
    ok.

%% Removes this run's temp dir if no failed case left its directory there.
end_suite() ->
    _ = file:del_dir(run_root()),
    ok.

run_root() ->
    Tmp = case os:getenv("TMPDIR") of
              false -> "/tmp";
              "" -> "/tmp";
              T -> T
          end,
    filename:join(Tmp, "strata_ra_ct-" ++ os:getpid()).

data_dir(Config) ->
    filename:join(?config(case_dir, Config), "ra").

%% Ra's system config as ra_system builds it, plus this module's options.
sys_cfg(Name, Dir, Options) ->
    #{name => Name,
      data_dir => Dir,
      names => #{log_meta => Name},
      strata_ra_log_meta => Options}.

%% Starts the owner unlinked, so that its controlled exits (the cases
%% provoke them) do not take the test case down.
start(Cfg) ->
    {ok, Pid} = strata_ra_log_meta:start_link(Cfg),
    unlink(Pid),
    Pid.

start_error(Cfg) ->
    process_flag(trap_exit, true),
    R = strata_ra_log_meta:start_link(Cfg),
    receive {'EXIT', _, _} -> ok after 1000 -> ok end,
    process_flag(trap_exit, false),
    R.

stop(Name) ->
    ok = strata_ra_log_meta:stop(Name).

owner(Name) -> whereis(Name).

handle(Name) -> ets:lookup_element(Name, '$strata_ra_log_meta_handle', 2).

kill_owner(Name) ->
    Pid = whereis(Name),
    MRef = monitor(process, Pid),
    exit(Pid, kill),
    killed = await_down(MRef, 5000),
    ok.

await_down(MRef, Timeout) ->
    receive
        {'DOWN', MRef, process, _, Reason} -> Reason
    after Timeout ->
        ct:fail({no_down_within, Timeout})
    end.

%% ---- Ra's meta.dets ----

%% Writes <Dir>/meta.dets as Ra's ra_log_meta does: the table named like the
%% log_meta process, {auto_save, 5000}, default type set and keypos 1, rows
%% {UId, CurrentTerm, VotedFor, LastApplied}; then closes it (as Ra's
%% terminate).
write_ra_dets(Dir, TableName, Rows) ->
    ok = filelib:ensure_path(Dir),
    File = filename:join(Dir, "meta.dets"),
    {ok, TableName} = dets:open_file(TableName, [{file, File}, {auto_save, 5000}]),
    ok = dets:insert(TableName, Rows),
    ok = dets:sync(TableName),
    ok = dets:close(TableName),
    File.

read_file(Path) ->
    case file:read_file(Path) of
        {ok, B} -> B;
        {error, enoent} -> missing
    end.

files(Dir) ->
    case file:list_dir(Dir) of
        {ok, Fs} -> lists:sort(Fs);
        {error, enoent} -> []
    end.

%% ---- child BEAMs ----

%% Starts `erl` running strata_ra_child:main() with Args (strings), with
%% this node's code path for strata_ra and the suites. Returns
%% {Port, OsPid}; the child's stdout (and stderr) arrive as lines.
spawn_child(Args, Config) ->
    Erl = os:find_executable("erl"),
    Ebin = filename:dirname(code:which(strata_ra_log_meta)),
    TestDir = filename:dirname(code:which(?MODULE)),
    Port = open_port({spawn_executable, Erl},
                     [{args, ["-noshell", "-pa", Ebin, "-pa", TestDir,
                              "-eval", "strata_ra_child:main()", "-extra" | Args]},
                      {line, 4096}, exit_status, use_stdio, stderr_to_stdout, binary]),
    {ok, [OsPid]} = child_line(Port, 30000, "PID"),
    ct:log("child ~s started: ~p (~p)", [OsPid, Args, Config =/= []]),
    {Port, OsPid}.

%% The next line of the child starting with Tag, split into words after it.
child_line(Port, Timeout, Tag) ->
    receive
        {Port, {data, {eol, Line}}} ->
            case string:lexemes(binary_to_list(Line), " ") of
                [Tag | Rest] -> {ok, Rest};
                _ -> child_line(Port, Timeout, Tag)
            end;
        {Port, {exit_status, S}} ->
            {exit, S}
    after Timeout ->
        timeout
    end.

%% Folds Fun(Words, Acc) -> {cont, Acc} | {stop, Acc} over the child's
%% lines (split into words) until it stops, the child exits, or Timeout ms
%% pass. Returns {Why, Acc}.
child_lines_until(Port, {Fun, Acc0}, Timeout) ->
    Deadline = erlang:monotonic_time(millisecond) + Timeout,
    lines_loop(Port, Fun, Acc0, Deadline).

lines_loop(Port, Fun, Acc, Deadline) ->
    Left = max(0, Deadline - erlang:monotonic_time(millisecond)),
    receive
        {Port, {data, {eol, Line}}} ->
            case Fun(string:lexemes(binary_to_list(Line), " "), Acc) of
                {cont, Acc1} -> lines_loop(Port, Fun, Acc1, Deadline);
                {stop, Acc1} -> {stopped, Acc1}
            end;
        {Port, {data, {noeol, _}}} ->
            lines_loop(Port, Fun, Acc, Deadline);
        {Port, {exit_status, S}} ->
            {{exit, S}, Acc}
    after Left ->
        {timeout, Acc}
    end.

kill9(OsPid) ->
    _ = os:cmd("kill -9 " ++ OsPid),
    ok.

%% The child's exit status; lines still queued are dropped.
await_exit(Port, Timeout) ->
    receive
        {Port, {exit_status, S}} -> S;
        {Port, {data, _}} -> await_exit(Port, Timeout)
    after Timeout ->
        ct:fail(child_did_not_exit)
    end.

percentile(Sorted, P) ->
    N = length(Sorted),
    lists:nth(max(1, min(N, round(P * N))), Sorted).
