%% Migration of Ra's meta.dets through the binding: the file is written here
%% with dets exactly as Ra's ra_log_meta writes it, and strata_ra_log_meta's
%% first start migrates it (raftmeta's crash-atomic migration), keeping the
%% source as meta.dets.migrated.
-module(strata_ra_migration_SUITE).

-compile([export_all, nowarn_export_all]).

-include_lib("common_test/include/ct.hrl").

-import(strata_ra_test_lib, [sys_cfg/3, start/1, stop/1, data_dir/1, files/1, read_file/1]).

suite() ->
    [{timetrap, {minutes, 10}}].

all() ->
    [migrates_ra_meta_dets,
     migrates_a_meta_dets_left_open_by_a_crashed_node,
     migration_is_crash_atomic,
     skips_migration_when_a_store_exists,
     finishes_retiring_after_a_crash_between_the_renames,
     corrupt_meta_dets_fails_loudly_and_is_left_untouched].

init_per_suite(Config) ->
    Config.

end_per_suite(_Config) ->
    strata_ra_test_lib:end_suite().

init_per_testcase(Case, Config) ->
    strata_ra_test_lib:init_case(Case, [{name, Case} | Config]).

end_per_testcase(Case, Config) ->
    catch strata_ra_log_meta:stop(Case),
    strata_ra_test_lib:end_case(Config).

cfg(Config) ->
    sys_cfg(?config(name, Config), data_dir(Config), #{}).

%% Rows as Ra leaves them: every voted_for form (none, {Name, Node}, a
%% legacy bare atom, non-Latin-1 atoms), fields still undefined (Ra creates
%% a row of undefineds and sets one field at a time).
ra_rows(N) ->
    [ra_row(I) || I <- lists:seq(1, N)].

ra_row(I) ->
    UId = <<"UID_", (integer_to_binary(I))/binary, "_QWERTY">>,
    case I rem 5 of
        0 -> {UId, I, undefined, I * 2};
        1 -> {UId, I, {list_to_atom("srv" ++ integer_to_list(I rem 37)),
                       list_to_atom("rabbit@host-" ++ integer_to_list(I rem 3))}, I * 2};
        2 -> {UId, I, list_to_atom("legacy" ++ integer_to_list(I rem 11)), undefined};
        3 -> {UId, undefined, undefined, undefined};
        4 -> {UId, I, {binary_to_atom(<<"サーバー"/utf8>>, utf8),
                       binary_to_atom(<<"rabbit@ホスト"/utf8>>, utf8)}, I}
    end.

check_rows(Name, Rows) ->
    lists:foreach(
      fun({UId, Term, Vote, Applied} = Row) ->
              case {strata_ra_log_meta:fetch(Name, UId, current_term),
                    strata_ra_log_meta:fetch(Name, UId, voted_for),
                    strata_ra_log_meta:fetch(Name, UId, last_applied)} of
                  {Term, Vote, Applied} -> ok;
                  Got -> ct:fail({row_differs, Row, Got})
              end
      end, Rows).

%% Ra's meta.dets (2000 rows of every form) is migrated on the first start:
%% every value reads back through fetch/3 as Ra stored it, the source is
%% kept as meta.dets.migrated, and the next start migrates nothing.
migrates_ra_meta_dets(Config) ->
    N = ?config(name, Config),
    Dir = data_dir(Config),
    Rows = ra_rows(2000),
    Dets = strata_ra_test_lib:write_ra_dets(Dir, N, Rows),
    Source = read_file(Dets),
    start(cfg(Config)),
    check_rows(N, Rows),
    #{migration := #{action := migrated, rows := 2000}, servers := 2000} =
        strata_ra_log_meta:stats(N),
    ["LOCK", "meta.dets.migrated", "meta.slots"] = files(Dir),
    Source = read_file(Dets ++ ".migrated"),
    %% Migrated servers take new writes, with Ra's rules.
    {UId, _, {_, _}, _} = lists:nth(1, Rows),
    ok = strata_ra_log_meta:store_sync(N, UId, current_term, 100000),
    undefined = strata_ra_log_meta:fetch(N, UId, voted_for),
    stop(N),
    start(cfg(Config)),
    #{migration := #{action := none}} = strata_ra_log_meta:stats(N),
    check_rows(N, tl(Rows)),
    100000 = strata_ra_log_meta:fetch(N, UId, current_term),
    undefined = strata_ra_log_meta:fetch(N, UId, voted_for),
    ok.

%% A Ra node that crashed left its meta.dets open (not properly closed):
%% 300 rows synced (Ra syncs a batch holding a call), then more rows and
%% updates that dets may still hold in its write cache (delayed_write) when
%% the node halts. It is migrated with exactly what dets itself recovers
%% from the file.
migrates_a_meta_dets_left_open_by_a_crashed_node(Config) ->
    N = ?config(name, Config),
    Dir = data_dir(Config),
    ok = filelib:ensure_path(Dir),
    Dets = filename:join(Dir, "meta.dets"),
    Erl = os:find_executable("erl"),
    Eval = lists:flatten(
             io_lib:format(
               "{ok, T} = dets:open_file(~p, [{file, ~p}, {auto_save, 5000}]), "
               "ok = dets:insert(T, [{integer_to_binary(I), I, {s, 'n@h'}, I} "
               "|| I <- lists:seq(1, 300)]), "
               "ok = dets:sync(T), "
               "ok = dets:insert(T, {<<\"bare\">>, 3, legacy, undefined}), "
               "ok = dets:insert(T, [{integer_to_binary(I), I + 1, undefined, I} "
               "|| I <- lists:seq(1, 50)]), "
               "erlang:halt(0).", [N, Dets])),
    _ = os:cmd(Erl ++ " -noshell -eval \"" ++ escape(Eval) ++ "\""),
    Source = read_file(Dets),
    true = is_binary(Source),
    %% What dets itself reads from it (on a copy: opening repairs).
    Copy = filename:join(?config(case_dir, Config), "copy.dets"),
    {ok, _} = file:copy(Dets, Copy),
    {ok, C} = dets:open_file(copy, [{file, Copy}, {repair, true}]),
    Rows = dets:foldl(fun(R, Acc) -> [R | Acc] end, [], C),
    ok = dets:close(C),
    ct:log("dets recovers ~b rows", [length(Rows)]),
    true = length(Rows) >= 300,
    start(cfg(Config)),
    check_rows(N, Rows),
    Servers = length(Rows),
    #{servers := Servers} = strata_ra_log_meta:stats(N),
    Source = read_file(Dets ++ ".migrated"),
    ok.

escape(S) ->
    lists:flatmap(fun($") -> "\\\""; ($$) -> "\\$"; (Ch) -> [Ch] end, S).

%% A BEAM killed (-9) while it migrates a large meta.dets (40000 rows, more
%% than a new store's default capacity) — at each phase the migration
%% reports, and at moments spread over its length — leaves either no store
%% and meta.dets intact, or the complete store; never a partial one. The
%% next start migrates, or finishes retiring meta.dets, and leaves no
%% temporary file behind.
migration_is_crash_atomic(Config) ->
    Rows = ra_rows(40000),
    Template = filename:join(?config(case_dir, Config), "template"),
    Dets = strata_ra_test_lib:write_ra_dets(Template, meta_template, Rows),
    Source = read_file(Dets),
    %% One uninterrupted run: the phases and how long the migration takes.
    {Window, Phases} = full_migration(Config, Dets),
    ct:log("an uninterrupted migration takes ~b ms (first progress to open); progress: ~p",
           [Window, Phases]),
    AtProgress = [{"first sizing report", fun(["PROGRESS", "sizing" | _]) -> true; (_) -> false end},
                  {"first writing report", fun(["PROGRESS", "writing" | _]) -> true; (_) -> false end},
                  {"half written", fun(["PROGRESS", "writing", D, T]) -> 2 * list_to_integer(D) >= list_to_integer(T);
                                      (_) -> false end},
                  {"first verifying report", fun(["PROGRESS", "verifying" | _]) -> true; (_) -> false end},
                  {"all verified", fun(["PROGRESS", "verifying", D, D]) -> true; (_) -> false end},
                  {"open", fun(["OPENED"]) -> true; (_) -> false end}],
    rand:seed(exsss, {28, 6, 2}),
    AtTime = [{"after " ++ integer_to_list(Ms) ++ " ms", Ms}
              || F <- [0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95],
                 Ms <- [round(F * Window + rand:uniform(5))]],
    Outcomes = [kill_and_retry(Config, Dets, Source, Rows, K) || K <- AtProgress ++ AtTime],
    ct:pal("outcomes of the kills: ~p", [Outcomes]),
    true = lists:member(no_store, [O || {_, O} <- Outcomes]),
    true = lists:any(fun({_, O}) -> O =/= no_store end, Outcomes),
    ok.

full_migration(Config, Dets) ->
    Dir = fresh_dir(Config, "full"),
    {ok, _} = file:copy(Dets, filename:join(Dir, "meta.dets")),
    {Port, _} = strata_ra_test_lib:spawn_child(["migrate", Dir, "meta_full"], Config),
    Fold = fun(["PROGRESS", Phase | _], {T0, Ps}) ->
                   T = case T0 of undefined -> now_ms(); _ -> T0 end,
                   {cont, {T, [Phase | Ps]}};
              (["OPENED"], {T0, Ps}) ->
                   {stop, {now_ms() - T0, lists:usort(Ps)}};
              (_, Acc) ->
                   {cont, Acc}
           end,
    {stopped, {Window, Phases}} =
        strata_ra_test_lib:child_lines_until(Port, {Fold, {undefined, []}}, 60000),
    0 = strata_ra_test_lib:await_exit(Port, 60000),
    {max(Window, 1), Phases}.

now_ms() -> erlang:monotonic_time(millisecond).

fresh_dir(Config, Tag) ->
    Dir = filename:join(?config(case_dir, Config),
                        Tag ++ "-" ++ integer_to_list(erlang:unique_integer([positive]))),
    ok = filelib:ensure_path(Dir),
    Dir.

kill_and_retry(Config, Dets, Source, Rows, {What, When}) ->
    Dir = fresh_dir(Config, "kill"),
    {ok, _} = file:copy(Dets, filename:join(Dir, "meta.dets")),
    {Port, OsPid} = strata_ra_test_lib:spawn_child(["migrate", Dir, "meta_kill"], Config),
    Why = case When of
              Match when is_function(Match) ->
                  strata_ra_test_lib:child_lines_until(
                    Port, {fun(Words, _) ->
                                   case Match(Words) of
                                       true -> {stop, Words};
                                       false -> {cont, none}
                                   end
                           end, none}, 60000);
              Ms ->
                  %% Timed from the migration's first report.
                  R = strata_ra_test_lib:child_lines_until(
                        Port, {fun(["PROGRESS" | _] = W, _) -> {stop, W};
                                  (_, A) -> {cont, A} end, none}, 60000),
                  timer:sleep(Ms),
                  R
          end,
    strata_ra_test_lib:kill9(OsPid),
    Status = strata_ra_test_lib:await_exit(Port, 30000),
    After = files(Dir),
    Outcome = check_after_kill(Dir, Source, After),
    ct:log("kill at ~s (~p): exit status ~p, files ~p: ~p", [What, Why, Status, After, Outcome]),
    %% The next start completes what the killed one began.
    Name = list_to_atom("retry_" ++ integer_to_list(erlang:unique_integer([positive]))),
    start(sys_cfg(Name, Dir, #{})),
    check_rows(Name, Rows),
    ["LOCK", "meta.dets.migrated", "meta.slots"] = files(Dir),
    Source = read_file(filename:join(Dir, "meta.dets.migrated")),
    stop(Name),
    _ = file:del_dir_r(Dir),
    {What, Outcome}.

%% Right after the kill: no store and the source untouched, or the store
%% in place (complete: checked by the retry) and the source either still
%% there (killed between the renames) or retired.
check_after_kill(Dir, Source, Files) ->
    Dets = filename:join(Dir, "meta.dets"),
    Retired = Dets ++ ".migrated",
    case lists:member("meta.slots", Files) of
        false ->
            Source = read_file(Dets),
            missing = read_file(Retired),
            no_store;
        true ->
            case {read_file(Dets), read_file(Retired)} of
                {Source, missing} -> store_and_source;
                {missing, Source} -> migrated
            end
    end.

%% A store already there: no migration. A meta.dets beside it that the
%% store was not made from (an older Ra wrote it after the migration) is
%% refused — start fails naming both, and neither file is touched — rather
%% than silently preferring one. Without it, the store opens as it was.
skips_migration_when_a_store_exists(Config) ->
    N = ?config(name, Config),
    Dir = data_dir(Config),
    start(cfg(Config)),
    ok = strata_ra_log_meta:store_sync(N, <<"own">>, current_term, 77),
    stop(N),
    Store = read_file(filename:join(Dir, "meta.slots")),
    Dets = strata_ra_test_lib:write_ra_dets(Dir, N, ra_rows(50)),
    Source = read_file(Dets),
    BinDir = list_to_binary(Dir),
    {error, {conflict, BinDir, Msg}} = strata_ra_test_lib:start_error(cfg(Config)),
    ct:log("~ts", [Msg]),
    Source = read_file(Dets),
    Store = read_file(filename:join(Dir, "meta.slots")),
    ok = file:delete(Dets),
    start(cfg(Config)),
    #{migration := #{action := none}, servers := 1} = strata_ra_log_meta:stats(N),
    77 = strata_ra_log_meta:fetch(N, <<"own">>, current_term),
    ok.

%% The crash window between raftmeta's two renames leaves the complete
%% store and meta.dets: the next start only retires meta.dets.
finishes_retiring_after_a_crash_between_the_renames(Config) ->
    N = ?config(name, Config),
    Dir = data_dir(Config),
    Rows = ra_rows(300),
    Dets = strata_ra_test_lib:write_ra_dets(Dir, N, Rows),
    start(cfg(Config)),
    stop(N),
    ok = file:rename(Dets ++ ".migrated", Dets),
    start(cfg(Config)),
    #{migration := #{action := retired_only}} = strata_ra_log_meta:stats(N),
    check_rows(N, Rows),
    ["LOCK", "meta.dets.migrated", "meta.slots"] = files(Dir),
    ok.

%% A meta.dets that is not a DETS file fails the start loudly, naming the
%% file, and is left as it was (no store is created).
corrupt_meta_dets_fails_loudly_and_is_left_untouched(Config) ->
    Dir = data_dir(Config),
    ok = filelib:ensure_path(Dir),
    Dets = filename:join(Dir, "meta.dets"),
    Junk = binary:copy(<<"not a dets file ">>, 100),
    ok = file:write_file(Dets, Junk),
    {error, {Code, _, Msg}} = strata_ra_test_lib:start_error(cfg(Config)),
    ct:log("~p: ~ts", [Code, Msg]),
    {match, _} = re:run(Msg, "meta.dets"),
    Junk = read_file(Dets),
    false = lists:member("meta.slots", files(Dir)),
    ok.
