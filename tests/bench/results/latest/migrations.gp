set terminal pngcairo size 1500,600 font "sans,10" noenhanced
set output "migrations.png"
set multiplot layout 1,2 title "cpu-migrations and context switches (perf stat -a): ratio to kernel default, median with min..max"
set style data histogram
set style histogram errorbars gap 1 lw 1
set style fill solid 0.6 border -1
set logscale y
set grid ytics
set key top left
set xtics rotate by -20
set title "cpu-migrations ratio (log scale)"
set ylabel "ratio to kernel default"
plot "counts.dat" using 2:3:4:xtic(1) title "observe", "counts.dat" using 5:6:7 title "latency", "counts.dat" using 8:9:10 title "latency-nocoloc", "counts.dat" using 11:12:13 title "balanced", "counts.dat" using 14:15:16 title "static", "counts.dat" using 17:18:19 title "static-a", "counts.dat" using 20:21:22 title "static-b", "counts.dat" using 23:24:25 title "static-best", "counts.dat" using 26:27:28 title "static-c", 1 with lines lc rgb "black" notitle
set title "context switches ratio (log scale)"
set ylabel "ratio to kernel default"
plot "counts.dat" using 29:30:31:xtic(1) title "observe", "counts.dat" using 32:33:34 title "latency", "counts.dat" using 35:36:37 title "latency-nocoloc", "counts.dat" using 38:39:40 title "balanced", "counts.dat" using 41:42:43 title "static", "counts.dat" using 44:45:46 title "static-a", "counts.dat" using 47:48:49 title "static-b", "counts.dat" using 50:51:52 title "static-best", "counts.dat" using 53:54:55 title "static-c", 1 with lines lc rgb "black" notitle
unset multiplot
